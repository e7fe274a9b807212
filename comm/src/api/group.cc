#include "api/group.h"

#include <algorithm>
#include <vector>

#include "api/handle.h"
#include "stream.h"

namespace conflux::api {

namespace {

struct PendingOp {
  cfxComm_t comm;
  cfxStream_t stream;
  std::unique_ptr<Op> op;
};

struct GroupState {
  int depth = 0;
  std::vector<PendingOp> ops;
  Outcome error;
};

thread_local GroupState tlsGroup;

struct CommBatch {
  cfxComm_t comm;
  Batch batch;
  bool blocking = false;
};

std::vector<CommBatch> batchesByComm(std::vector<PendingOp>& ops) {
  std::vector<CommBatch> out;
  for (auto& p : ops) {
    auto it = std::find_if(out.begin(), out.end(), [&](const CommBatch& b) { return b.comm == p.comm; });
    if (it == out.end()) it = out.insert(out.end(), CommBatch{p.comm, {}, false});
    it->batch.ops.push_back(std::move(p.op));
    if (p.stream == nullptr) {
      it->blocking = true;
    } else {
      auto* s = static_cast<Stream*>(p.stream);
      if (std::find(it->batch.streams.begin(), it->batch.streams.end(), s) == it->batch.streams.end()) {
        it->batch.streams.push_back(s);
      }
    }
  }
  return out;
}

// Runs each communicator's batch of a group; throws the first failure.
void runBatches(std::vector<CommBatch>& batches, const std::vector<std::unique_ptr<CommRef>>& refs) {
  if (batches.size() == 1 && batches[0].blocking) {
    (*refs[0])->engine().runBlocking(std::move(batches[0].batch)).raise();
    return;
  }
  // Several communicators: all batches go to their progress threads at once, so operations on
  // different communicators that depend on each other cannot deadlock, then we wait.
  std::vector<std::shared_ptr<Completion>> waits;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto done = batches[i].blocking ? std::make_shared<Completion>() : nullptr;
    (*refs[i])->engine().enqueue(std::move(batches[i].batch), done);
    if (done) waits.push_back(done);
  }
  Outcome first;
  for (auto& w : waits) {
    Outcome o = w->wait();
    if (first.ok() && !o.ok()) first = o;
  }
  first.raise();
}

// The common case (a thread's Send/Recv pairs on one communicator, on one stream or none): one
// batch, built without the per-communicator bookkeeping below; a blocking one runs on this thread.
bool singleTarget(const std::vector<PendingOp>& ops) {
  for (const auto& p : ops) {
    if (p.comm != ops[0].comm || p.stream != ops[0].stream) return false;
  }
  return true;
}

void runSingleTarget(std::vector<PendingOp>& ops) {
  CommRef ref(ops[0].comm);
  Batch batch;
  batch.ops.reserve(ops.size());
  for (auto& p : ops) batch.ops.push_back(std::move(p.op));
  try {
    if (ops[0].stream == nullptr) {
      ref->engine().runBlocking(std::move(batch)).raise();
    } else {
      batch.streams.push_back(static_cast<Stream*>(ops[0].stream));
      ref->engine().enqueue(std::move(batch), nullptr);
    }
  } catch (const Error& e) {
    recordError(ops[0].comm, std::string("cfxGroupEnd: ") + e.what());
    throw;
  }
}

}  // namespace

bool inGroup() { return tlsGroup.depth > 0; }

void groupStart() { ++tlsGroup.depth; }

void groupAdd(cfxComm_t comm, cfxStream_t stream, std::unique_ptr<Op> op) {
  tlsGroup.ops.push_back(PendingOp{comm, stream, std::move(op)});
}

void groupFail(const Outcome& error) {
  if (tlsGroup.error.ok()) tlsGroup.error = error;
}

void groupEnd() {
  GroupState& g = tlsGroup;
  if (g.depth == 0) throw Error(Status::kInvalidUsage, "cfxGroupEnd without a matching cfxGroupStart");
  if (--g.depth > 0) return;
  std::vector<PendingOp> ops;
  ops.swap(g.ops);
  Outcome error = g.error;
  g.error = Outcome{};
  if (!error.ok()) throw Error(error.status, "group not run: " + error.message);
  if (ops.empty()) return;
  if (singleTarget(ops)) {
    runSingleTarget(ops);
    ops.clear();
    if (g.ops.empty()) g.ops.swap(ops);  // keep the capacity for the next group of this thread
    return;
  }

  std::vector<CommBatch> batches = batchesByComm(ops);
  std::vector<std::unique_ptr<CommRef>> refs;
  for (auto& b : batches) refs.push_back(std::make_unique<CommRef>(b.comm));

  // A failure is also each communicator's last error, not only this thread's: the caller asks
  // cfxGetLastError(comm) of the communicator that failed.
  try {
    runBatches(batches, refs);
  } catch (const Error& e) {
    for (auto& b : batches) recordError(b.comm, std::string("cfxGroupEnd: ") + e.what());
    throw;
  }
}

void submit(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::unique_ptr<Op> op) {
  if (inGroup()) {
    groupAdd(comm, stream, std::move(op));
    return;
  }
  if (stream == nullptr) {
    impl.engine().runBlocking(std::move(op)).raise();
    return;
  }
  impl.engine().enqueue(std::move(op), static_cast<Stream*>(stream));
}

void submitAll(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::vector<std::unique_ptr<Op>> ops) {
  if (inGroup()) {
    for (auto& op : ops) groupAdd(comm, stream, std::move(op));
    return;
  }
  Batch b;
  b.ops = std::move(ops);
  if (stream == nullptr) {
    impl.engine().runBlocking(std::move(b)).raise();
    return;
  }
  b.streams.push_back(static_cast<Stream*>(stream));
  impl.engine().enqueue(std::move(b), nullptr);
}

}  // namespace conflux::api
