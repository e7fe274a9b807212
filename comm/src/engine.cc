#include "engine.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "executor.h"

namespace conflux {

namespace {
// The streams of work that was never queued (it ran on the caller's thread).
const std::vector<Stream*>& noStreams() {
  static const std::vector<Stream*> none;
  return none;
}
}  // namespace

void Completion::set(const Outcome& o) {
  std::lock_guard<std::mutex> lock(mu_);
  outcome_ = o;
  done_ = true;
  cv_.notify_all();
}

Outcome Completion::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return outcome_;
}

Engine::~Engine() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    ++idleWaiters_;
    setAttentionLocked();
    idle_.wait(lock, [&] { return queue_.empty() && !busyLocked(); });
    --idleWaiters_;
    stop_ = true;
    setAttentionLocked();
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::setAttentionLocked() {
  if (!queue_.empty() || !failed_.ok() || idleWaiters_ > 0 || stop_) {
    gate_.fetch_or(kAttention, std::memory_order_acq_rel);
  } else {
    gate_.fetch_and(~kAttention, std::memory_order_acq_rel);
  }
}

bool Engine::claimFast() {
  uint32_t idle = 0;
  return gate_.compare_exchange_strong(idle, kBusy, std::memory_order_acquire, std::memory_order_relaxed);
}

bool Engine::claimLocked() { return (gate_.fetch_or(kBusy, std::memory_order_acq_rel) & kBusy) == 0; }

void Engine::releaseLocked() { gate_.fetch_and(~kBusy, std::memory_order_acq_rel); }

void Engine::release() {
  uint32_t busy = kBusy;
  if (gate_.compare_exchange_strong(busy, 0, std::memory_order_release, std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  releaseLocked();
  notifyLocked();
}

void Engine::releaseAndRing() {
  const bool owed = ctx_.takeRingOwed();
  release();
  if (owed) ctx_.ringArmedAfterLocked();
}

void Engine::notifyLocked() {
  // kAttention first: a thread that releases without the mutex after this sees it and comes here
  // to wake; one that released before is seen as not busy below.
  setAttentionLocked();
  const bool busy = busyLocked();
  if (!queue_.empty()) {
    if (!busy) work_.notify_one();
  } else if (!busy && idleWaiters_ > 0) {
    idle_.notify_all();
  }
}

uint32_t Engine::failedCallOf(std::span<std::unique_ptr<Op>> ops, const EarlyCalls& early) {
  if (!early.empty()) return 0;  // a call awaiting its confirmation ran on this host: no call number
  for (const auto& op : ops) {
    if (!op->done()) return op->callSeq();
  }
  return 0;
}

Outcome Engine::attempt(std::span<std::unique_ptr<Op>> ops, const RunLimit* limit, bool& finished) {
  Outcome out;
  finished = true;
  if (recorder_) {
    for (const auto& op : ops) recorder_->started(op->flightId);
  }
  try {
    finished = executeBatch(ctx_, ops, limit, recorder_ ? &observer_ : nullptr, early_);
  } catch (...) {
    out = currentException();
    out.failedCall = failedCallOf(ops, early_);
  }
  if (out.ok() && finished) {
    if (recorder_) {
      for (const auto& op : ops) recorder_->finished(op->flightId, true);
    }
    if (ops.size() == 1) keepEarly(*ops[0]);
  }
  if (!out.ok()) {
    early_.clear();
    logWarn(out.message);
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      first = failed_.ok();
      if (first) failed_ = out;
      setAttentionLocked();  // no call claims the engine past the failure
    }
    if (first && onFailure_ && out.status != Status::kInvalidArgument) onFailure_(out);
  }
  return out;
}

void Engine::recordRefused(std::span<const std::unique_ptr<Op>> ops) {
  if (!recorder_) return;
  for (const auto& op : ops) recorder_->finished(op->flightId, false);
}

Outcome Engine::execute(std::span<std::unique_ptr<Op>> ops, const std::vector<Stream*>& streams,
                        bool checked) {
  Outcome out;
  if (!checked) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) out = Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
  }
  if (out.ok()) {
    bool finished = false;
    out = attempt(ops, nullptr, finished);
  } else {
    recordRefused(ops);
  }
  for (Stream* s : streams) s->completed(out);
  return out;
}

Outcome Engine::runBlocking(Batch batch) {
  flight::dumpIfRequested();
  std::unique_lock<std::mutex> lock(mu_);
  if (queue_.empty() && !busyLocked() && !failed_.ok()) {
    recordRefused(batch.ops);
    return Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
  }
  if (queue_.empty() && claimLocked()) {
    lock.unlock();
    Outcome out = execute(batch.ops, batch.streams, true);
    lock.lock();
    releaseLocked();
    notifyLocked();
    return out;
  }
  lock.unlock();
  auto done = std::make_shared<Completion>();
  enqueue(std::move(batch), done);
  return done->wait();
}

Outcome Engine::runBlocking(std::span<std::unique_ptr<Op>> ops) {
  flight::dumpIfRequested();
  if (claimFast()) {  // idle, nothing queued, no failure: run here
    Outcome out = execute(ops, noStreams(), true);
    release();
    return out;
  }
  return runBlocking(Batch{takeOps(ops), {}});
}

bool Engine::runItem(Item& item, const RunLimit* limit) {
  Outcome out;
  bool finished = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) out = Outcome{failed_.status, "communicator failed earlier: " + failed_.message};
  }
  if (out.ok()) {
    out = attempt(item.batch.ops, limit, finished);
  } else {
    recordRefused(item.batch.ops);
  }
  if (!finished) return false;
  // A batch that finished before its streams counted it concerns them only if it failed.
  for (Stream* s : item.batch.streams) {
    if (!item.counted) {
      if (out.ok()) continue;
      s->enqueued();
    }
    s->completed(out);
  }
  if (item.done) item.done->set(out);
  return true;
}

void Engine::countStreams(Item& item) {
  if (item.counted) return;
  for (Stream* s : item.batch.streams) s->enqueued();
  item.counted = true;
}

void Engine::enqueue(Batch batch, std::shared_ptr<Completion> done) {
  flight::dumpIfRequested();
  Item item{std::move(batch), std::move(done)};
  std::unique_lock<std::mutex> lock(mu_);
  if (!claimLocked()) {
    lock.unlock();
    countStreams(item);
    lock.lock();
    queue_.push_back(std::move(item));
    if (!thread_.joinable()) thread_ = std::thread(&Engine::threadMain, this);
    notifyLocked();
    return;
  }
  // No thread runs this engine's work: run it here. Queued work the progress thread has not
  // started yet goes first, so the order is kept.
  std::vector<Item> earlier;
  if (!queue_.empty()) {
    earlier.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
    queue_.clear();
  }
  lock.unlock();
  const RunLimit limit{ctx_.wait().spin + kEagerYields, kEagerBusy};
  size_t ran = 0;
  while (ran < earlier.size() && runItem(earlier[ran], &limit)) ++ran;
  bool stalled = ran < earlier.size() || !runItem(item, &limit);
  if (stalled) countStreams(item);
  lock.lock();
  if (stalled) {
    // The peers are not there yet: the progress thread goes on from where this stopped, ahead of
    // anything queued meanwhile (queued, and kAttention set, before the engine is released, so no
    // call claims it in between).
    queue_.push_front(std::move(item));
    for (size_t i = earlier.size(); i > ran; --i) queue_.push_front(std::move(earlier[i - 1]));
    setAttentionLocked();
    if (!thread_.joinable()) thread_ = std::thread(&Engine::threadMain, this);
  }
  releaseLocked();
  notifyLocked();
}

bool Engine::claimWhenIdle() {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + kCatchUp;
  do {
    sched_yield();
    if (claimFast()) return true;
  } while (Clock::now() < until);
  return false;
}

void Engine::enqueue(std::span<std::unique_ptr<Op>> ops, Stream* stream) {
  flight::dumpIfRequested();
  // Busy, queued work, a failure or a waiter: the queue's path (a latency-path call first waits a
  // little for the progress thread to finish: kCatchUp).
  const bool small = std::all_of(ops.begin(), ops.end(), [](const auto& op) { return op->runsAhead() || op->quickKey() >= 0; });
  if (!claimFast() && !(small && claimWhenIdle())) {
    enqueue(Batch{takeOps(ops), {stream}}, nullptr);
    return;
  }
  runClaimed(ops, stream);
}

bool Engine::runQuick(std::span<P2pOp> ops, Stream* stream, Outcome& out) {
  flight::dumpIfRequested();
  if (ops.size() > kQuickOps || !claimFast()) return false;
  if (!early_.empty()) {  // the earlier calls' confirmations come first: the usual path
    release();
    return false;
  }
  Op* raw[kQuickOps];
  for (size_t i = 0; i < ops.size(); ++i) raw[i] = &ops[i];
  // The flight records are written once the first pass has published the sends: in a SendRecv
  // the peer's reply is then on its way meanwhile (or here, when no pass ran or one threw).
  struct Record final : QuickStarted {
    flight::Recorder* recorder;
    std::span<P2pOp> ops;
    bool done = false;
    Record(flight::Recorder* r, std::span<P2pOp> o) : recorder(r), ops(o) {}
    void operator()() override {
      done = true;
      if (recorder == nullptr) return;
      const int64_t queued = flight::Recorder::now();
      flight::Recorder::Writing writing(*recorder);
      for (P2pOp& op : ops) op.flightId = writing.add(op.flightCall(), queued);
    }
  } record(recorder_, ops);
  bool finished = false;
  try {
    finished = conflux::runQuick(ctx_, std::span<Op* const>(raw, ops.size()), &record);
  } catch (const std::exception&) {
    finished = false;  // the usual path meets it again, from the same state, and reports it
  }
  if (!record.done) record();
  if (finished) {
    if (recorder_) {
      for (const P2pOp& op : ops) recorder_->finished(op.flightId, true);
    }
    releaseAndRing();
    return true;
  }
  ctx_.flushRing();
  std::vector<std::unique_ptr<Op>> left;
  for (const P2pOp& op : ops) {
    if (!op.done()) {
      left.push_back(std::make_unique<P2pOp>(op));
    } else if (recorder_) {
      recorder_->finished(op.flightId, true);
    }
  }
  if (stream != nullptr) {
    runClaimed(left, stream);
    return true;
  }
  out = execute(left, noStreams(), true);
  release();
  return true;
}

bool Engine::runQuick(MailboxOp& op, const flight::Call& call, Stream* stream, Outcome& out) {
  return runQuickWith(op, call, stream, out, [&] { return std::unique_ptr<Op>(std::make_unique<MailboxOp>(op)); });
}

bool Engine::runQuick(Op& op, const flight::Call& call, Stream* stream, Outcome& out, QuickSpill& spill) {
  return runQuickWith(op, call, stream, out, [&] { return spill.toHeap(); });
}

template <class ToHeap>
bool Engine::runQuickWith(Op& op, const flight::Call& call, Stream* stream, Outcome& out, ToHeap&& toHeap) {
  flight::dumpIfRequested();
  if (!claimFast()) return false;
  if (recorder_) op.flightId = recorder_->add(call);
  bool finished = false;
  try {
    finished = runExpress(ctx_, op, early_);
  } catch (const std::exception&) {
    finished = false;  // the usual path meets it again, from the same state, and reports it
  }
  if (!finished) {
    std::unique_ptr<Op> left = toHeap();
    if (stream != nullptr) {
      runClaimed(std::span<std::unique_ptr<Op>>(&left, 1), stream);
      return true;
    }
    out = execute(std::span<std::unique_ptr<Op>>(&left, 1), noStreams(), true);
    release();
    return true;
  }
  if (recorder_) recorder_->finished(op.flightId, true);
  keepEarly(op);
  releaseAndRing();
  return true;
}

void Engine::keepEarly(const Op& op) {
  if (const uint64_t seq = op.readyEarly(); seq != 0) early_.push(seq);
}

void Engine::runClaimed(std::span<std::unique_ptr<Op>> ops, Stream* stream) {
  const RunLimit limit{ctx_.wait().spin + kEagerYields, kEagerBusy};
  bool finished = true;
  const Outcome out = attempt(ops, &limit, finished);
  // Finished before the stream counted it: it concerns the stream only if it failed.
  if (finished && !out.ok()) {
    stream->enqueued();
    stream->completed(out);
  }
  if (finished) {
    release();
    return;
  }
  Item item{Batch{takeOps(ops), {stream}}, nullptr};
  countStreams(item);
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_front(std::move(item));  // the progress thread goes on from where this stopped
  setAttentionLocked();                // before the release, so no call claims the engine first
  releaseLocked();
  if (!thread_.joinable()) thread_ = std::thread(&Engine::threadMain, this);
  notifyLocked();
}

std::vector<std::unique_ptr<Op>> Engine::takeOps(std::span<std::unique_ptr<Op>> ops) {
  return std::vector<std::unique_ptr<Op>>(std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
}

void Engine::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  ++idleWaiters_;
  setAttentionLocked();
  idle_.wait(lock, [&] { return queue_.empty() && !busyLocked(); });
  --idleWaiters_;
  setAttentionLocked();
}

Outcome Engine::asyncError() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
  }
  // A peer's failure that this rank's next operation would meet (a mismatch found by the ranks
  // that read this one, say) is this rank's asynchronous error already.
  std::string message;
  const Status s = ctx_.health().poisonStatus(&message);
  return s == Status::kSuccess ? Outcome{} : Outcome{s, message};
}

void Engine::threadMain() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stop_ || (!queue_.empty() && !busyLocked()); });
    if (stop_ && queue_.empty()) return;
    // Not busy, and no call claims it while work is queued (kAttention): this claim succeeds.
    if (!claimLocked()) continue;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    setAttentionLocked();
    lock.unlock();
    Outcome out = execute(item.batch.ops, item.batch.streams, false);
    if (item.done) item.done->set(out);
    lock.lock();
    releaseLocked();
    notifyLocked();
  }
}

}  // namespace conflux
