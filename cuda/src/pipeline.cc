#include "pipeline.h"

#include "common/error.h"
#include "reduce/type_size.h"

namespace conflux::staged {

namespace {

size_t elemSize(cfxDataType_t t) {
  const size_t size = reduce::dataTypeSize(t);
  if (size == 0) throw Error(Status::kInvalidArgument, "invalid datatype " + std::to_string(t));
  return size;
}

}  // namespace

Pipeline::Pipeline(cfxComm_t comm, std::unique_ptr<CopyEngine> engine) : comm_(comm), engine_(std::move(engine)) {
  int timeoutMs = 0;
  if (cfxCommUserRank(comm, &rank_) != cfxSuccess || cfxCommCount(comm, &nranks_) != cfxSuccess ||
      cfxCommGetTimeout(comm, &timeoutMs) != cfxSuccess) {
    throw Error(Status::kInvalidArgument, "the pipeline's communicator is not valid");
  }
  timeout_ = std::chrono::milliseconds(timeoutMs);
  thread_ = std::thread([this] { run(); });
}

Pipeline::~Pipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Pipeline::submit(const Call& call, void* stream) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_ != cfxSuccess) throw Error(static_cast<Status>(error_), "an earlier staged operation failed: " + errorMessage_);
  }
  const size_t es = elemSize(call.type);
  HostPart part{call, shapeOf(call.coll, call.count, nranks_, rank_, call.root), {}, nextSeq_};
  part.chunks = chunksOf(part.shape, es, engine_->slotBytes());
  const size_t pitch = call.count * es;  // device rows: one block of `count` per rank
  engine_->begin(stream);
  // Chunks whose copy in is on the engine: the host part must wait for and release each of them,
  // also when the engine fails part way (then it only releases them, so no copy waits forever).
  size_t queued = 0;
  try {
    for (const Chunk& c : part.chunks) {
      const uint64_t seq = nextSeq_++;
      char* slot = engine_->slot(static_cast<int>(seq % engine_->slots()));
      const SlotLayout l = slotLayout(part.shape, c.cols, es);
      const size_t at = c.col * es;
      const Shape& s = part.shape;
      engine_->copyIn(seq, Copy2D{static_cast<const char*>(call.send) + at, pitch, slot + l.inOffset, l.rowBytes,
                                  l.rowBytes, s.copyIn ? static_cast<size_t>(s.inRows) : 0});
      ++queued;
      engine_->copyOut(seq, Copy2D{slot + l.outOffset, l.rowBytes, static_cast<char*>(call.recv) + at, pitch,
                                   l.rowBytes, s.copyOut ? static_cast<size_t>(s.outRows) : 0});
    }
    engine_->end(stream);
  } catch (const Error& e) {
    part.chunks.resize(queued);
    recordError(static_cast<cfxResult_t>(static_cast<int>(e.status())), e.what());
    enqueue(std::move(part));
    throw;
  }
  enqueue(std::move(part));
}

void Pipeline::enqueue(HostPart part) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(part));
  }
  cv_.notify_all();
}

void Pipeline::recordError(cfxResult_t r, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (error_ != cfxSuccess) return;  // the first failure is the one kept
  error_ = r;
  errorMessage_ = message;
}

void Pipeline::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

cfxResult_t Pipeline::asyncError(std::string* message) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (message) *message = errorMessage_;
  return error_;
}

void Pipeline::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    HostPart part = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    runHost(part);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void Pipeline::runHost(const HostPart& part) {
  uint64_t seq = part.firstSeq;
  for (const Chunk& c : part.chunks) {
    bool failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      failed = error_ != cfxSuccess;
    }
    // After a failure nothing more is run, and nothing waits for an input that may never come: each
    // chunk is only released, so its copy out (and the user's stream behind it) goes ahead.
    try {
      if (!failed) {
        engine_->waitIn(seq, timeout_);
        const cfxResult_t r = runChunk(part, c, seq);
        if (r != cfxSuccess) recordError(r, cfxGetLastError(comm_));
      }
    } catch (const Error& e) {  // the engine failed (a CUDA error) or the input never came
      recordError(static_cast<cfxResult_t>(static_cast<int>(e.status())), e.what());
    }
    try {
      engine_->release(seq);
    } catch (const Error& e) {
      recordError(static_cast<cfxResult_t>(static_cast<int>(e.status())), e.what());
    }
    ++seq;
  }
}

cfxResult_t Pipeline::runChunk(const HostPart& part, const Chunk& chunk, uint64_t seq) {
  const Call& c = part.call;
  const size_t es = elemSize(c.type);
  char* slot = engine_->slot(static_cast<int>(seq % engine_->slots()));
  const SlotLayout l = slotLayout(part.shape, chunk.cols, es);
  char* in = slot + l.inOffset;
  char* out = slot + l.outOffset;
  const size_t n = chunk.cols;
  switch (c.coll) {
    case Coll::kAllReduce: return cfxAllReduce(in, out, n, c.type, c.op, comm_, nullptr);
    case Coll::kReduce: return cfxReduce(in, out, n, c.type, c.op, c.root, comm_, nullptr);
    case Coll::kBroadcast: return cfxBroadcast(in, out, n, c.type, c.root, comm_, nullptr);
    case Coll::kAllGather: return cfxAllGather(in, out, n, c.type, comm_, nullptr);
    case Coll::kReduceScatter: return cfxReduceScatter(in, out, n, c.type, c.op, comm_, nullptr);
    case Coll::kAlltoAll: return cfxAlltoAll(in, out, n, c.type, comm_, nullptr);
    case Coll::kSend: return cfxSend(in, n, c.type, c.root, comm_, nullptr);
    case Coll::kRecv: return cfxRecv(out, n, c.type, c.root, comm_, nullptr);
  }
  return cfxInternalError;
}

}  // namespace conflux::staged
