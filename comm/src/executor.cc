#include "executor.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <functional>

namespace conflux {

namespace {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The wait of the quick paths (runQuick, runExpress): a quarter of a wait's spin of polls, or,
// where ranks share cores (no spinning), kQuickYields yields: the peer a call waits for is then
// usually runnable on this core, and a yield hands the core over without the full run's heap
// copies and waiting machinery.
class QuickWait {
 public:
  explicit QuickWait(const Context& ctx) : polls_(ctx.wait().spin / 4), yields_(polls_ == 0 ? kQuickYields : 0) {}
  void moved() { idle_ = 0; }
  // After a pass that moved nothing: rings the peers on the first (one may wait for what this
  // call published or finished), then pauses or yields; false once the wait is over.
  bool idle(Context& ctx) {
    if (idle_ == 0) ctx.flushRing();
    if (++idle_ > polls_ + yields_) return false;
    if (idle_ > polls_) {
      sched_yield();
    } else {
      cpuRelax();
    }
    return true;
  }

 private:
  int polls_;
  int yields_;
  int idle_ = 0;
};

// Per-peer flags of one pass: inline for the usual communicator sizes, no allocation per batch.
class PeerFlags {
 public:
  void resize(size_t n) {
    n_ = n;
    if (n > kInline) heap_.resize(n);
  }
  void clear() { std::fill(data(), data() + n_, 0); }
  char& operator[](size_t i) { return data()[i]; }

 private:
  static constexpr size_t kInline = 64;
  char* data() { return n_ > kInline ? heap_.data() : inline_; }
  size_t n_ = 0;
  char inline_[kInline] = {};
  std::vector<char> heap_;
};

// This rank's published "waiting for" (Health::publishWaitingFor), set while a wait sleeps and
// cleared when the batch returns or throws; nothing is written on a wait that never sleeps.
class WaitNotice {
 public:
  explicit WaitNotice(Context& ctx) : ctx_(ctx) {}
  ~WaitNotice() {
    if (local_ >= 0 || across_ >= 0) ctx_.health().publishWaitingFor(-1, -1);
  }
  WaitNotice(const WaitNotice&) = delete;
  WaitNotice& operator=(const WaitNotice&) = delete;
  // `local`: a local rank; `across`: a communicator rank on another host (-1: none).
  void publish(int local, int across) {
    if (local == local_ && across == across_) return;
    ctx_.health().publishWaitingFor(local, across);
    local_ = local;
    across_ = across;
  }

 private:
  Context& ctx_;
  int local_ = -1;
  int across_ = -1;
};

// Announces, when the batch returns or throws, an operation finished without waking the peers
// (Context::finishOp).
class RingOnExit {
 public:
  explicit RingOnExit(Context& ctx) : ctx_(ctx) {}
  ~RingOnExit() { ctx_.flushRing(); }
  RingOnExit(const RingOnExit&) = delete;
  RingOnExit& operator=(const RingOnExit&) = delete;

 private:
  Context& ctx_;
};

class BatchRunner {
 public:
  BatchRunner(Context& ctx, std::span<const std::unique_ptr<Op>> ops, EarlyCalls& pending)
      : ctx_(ctx),
        ops_(ops),
        pending_(pending),
        runAhead_(static_cast<size_t>(ctx.wait().runAhead)),
        earlyAllowed_(ops.size() == 1 && !ops[0]->isPointToPoint()) {
    // Busy flags are only needed when point-to-point operations are present.
    // Peers are communicator ranks, which may exceed the local ranks of this context.
    size_t peers = 0;
    for (auto& op : ops_) {
      if (op->isPointToPoint()) peers = std::max(peers, static_cast<size_t>(op->peer()) + 1);
    }
    sendBusy_.resize(peers);
    recvBusy_.resize(peers);
  }

  // One pass over the batch. Returns whether anything moved; sets finished_ when all are done.
  bool step() {
    bool moved = false;
    finished_ = true;
    sendBusy_.clear();
    recvBusy_.clear();
    // Earlier calls' confirmations go first, oldest first; they finish in order.
    moved |= pending_.confirm(ctx_);
    const size_t unconfirmed = pendingLeft();
    if (unconfirmed > 0) finished_ = false;
    bool collectiveActive = unconfirmed > 0;
    const bool mayRunAhead = unconfirmed < runAhead_;
    for (auto& op : ops_) {
      if (op->done()) continue;
      finished_ = false;
      if (!op->isPointToPoint()) {
        if (collectiveActive && !(mayRunAhead && op->runsAhead())) continue;
        collectiveActive = true;
      } else {
        auto& busy = op->isSend() ? sendBusy_ : recvBusy_;
        if (busy[op->peer()]) continue;
        busy[op->peer()] = 1;
      }
      moved |= op->progress(ctx_);
    }
    if (moved && !finished_) finished_ = allDone();
    if (!finished_ && earlyAllowed_ && ops_[0]->readyEarly()) finished_ = pendingLeft() < runAhead_;
    return moved;
  }

  bool finished() const { return finished_; }

  // Earlier calls not yet confirmed (they finish in order).
  size_t pendingLeft() const { return pending_.size(); }

  bool allDone() const {
    if (pendingLeft() > 0) return false;
    return std::all_of(ops_.begin(), ops_.end(), [](auto& o) { return o->done(); });
  }

  // Every unfinished operation, earlier calls' confirmations first.
  template <class F>
  void forUnfinished(F&& f) const {
    pending_.forEach(f);
    for (auto& op : ops_) {
      if (!op->done()) f(*op);
    }
  }

  // Whether a point-to-point operation is unfinished: then any failure of a peer concerns this
  // batch (a collective is concerned only by failures of its call or an earlier one).
  bool pointToPoint() const {
    for (auto& op : ops_) {
      if (op->isPointToPoint() && !op->done()) return true;
    }
    return false;
  }

  std::vector<int> waitedOn() const {
    std::vector<int> ranks;
    forUnfinished([&](const Op& op) { op.waitingOn(ctx_, ranks); });
    return ranks;
  }

  // The first communicator rank on another host the batch waits for, or -1.
  int waitedAcross() const {
    std::vector<int> ranks;
    forUnfinished([&](const Op& op) { op.waitingAcross(ranks); });
    return ranks.empty() ? -1 : ranks.front();
  }

  void report(const WaitObserver& observer) const {
    std::vector<int> ranks;
    forUnfinished([&](const Op& op) {
      ranks.clear();
      op.waitingOn(ctx_, ranks);
      for (int& r : ranks) r = ctx_.commRank(r);
      op.waitingAcross(ranks);  // already communicator ranks
      observer.waiting(op, ranks, op.describe(ctx_));
    });
  }

  // The first proof that a peer made a different call (Op::crossedCall), or empty.
  std::string crossedCall() const {
    uint32_t oldest = 0;
    forUnfinished([&](const Op& op) {
      if (const uint32_t c = op.callSeq(); c != 0 && (oldest == 0 || c < oldest)) oldest = c;
    });
    std::string why;
    forUnfinished([&](const Op& op) {
      if (why.empty()) why = op.crossedCall(oldest);
    });
    return why;
  }

  std::string pending() const {
    std::string s;
    forUnfinished([&](const Op& op) {
      if (!s.empty()) s += "; ";
      s += op.describe(ctx_);
    });
    return s;
  }

 private:
  Context& ctx_;
  std::span<const std::unique_ptr<Op>> ops_;
  EarlyCalls& pending_;  // the engine's; each one confirmed leaves it
  size_t runAhead_;      // calls that may await their confirmation at once (WaitSettings)
  bool earlyAllowed_;  // a batch of one collective may finish when it is ready early
  PeerFlags sendBusy_;
  PeerFlags recvBusy_;
  bool finished_ = false;
};

}  // namespace

// (A 1-rank 8 B Broadcast: 1,673 -> 1,498 instructions per call; perf/RESULTS.md, 2026-11-27 (sixth).)
bool runExpress(Context& ctx, Op& op, EarlyCalls& pending) {
  if (ctx.health().aborted() || ctx.health().poisonReaches(false)) return false;
  const size_t window = static_cast<size_t>(ctx.wait().runAhead);
  // The earlier calls are confirmed in bulk, once half the window awaits confirmation, then every
  // kConfirmStride calls, and whenever the window is full: one look at a peer's progress confirms
  // many (MailboxOp::progress), where a look at every call, each a miss while the peer finishes a
  // call at a time, cost a Broadcast's root about a fifth of its time.
  const size_t half = window / 2;
  if (pending.size() >= window || (pending.size() >= half && (pending.size() - half) % kConfirmStride == 0)) {
    pending.confirm(ctx);
  }
  if (pending.size() >= window) return false;
  // Polled as runQuick polls: the peers of a call on the latency path are usually a moment away,
  // and the full run copies the call to the heap and sets up its waiting first.
  QuickWait wait(ctx);
  for (;;) {
    const bool moved = op.progress(ctx);
    if (op.done() || op.readyEarly()) return true;  // done: every earlier call is (they finish in order)
    if (moved) {
      wait.moved();
    } else if (!wait.idle(ctx)) {
      return false;
    }
  }
}

bool executeBatch(Context& ctx, std::span<const std::unique_ptr<Op>> ops, const RunLimit* limit,
                  const WaitObserver* observer, EarlyCalls& pending) {
  using Clock = std::chrono::steady_clock;
  RingOnExit ringOnExit(ctx);
  if (ops.size() == 1 && ops[0]->runsAhead() && runExpress(ctx, *ops[0], pending)) return true;
  if (ops.size() > 1 && ops.size() <= kQuickOps && pending.empty()) {
    Op* raw[kQuickOps];
    for (size_t i = 0; i < ops.size(); ++i) raw[i] = ops[i].get();
    if (runQuick(ctx, std::span<Op* const>(raw, ops.size()))) return true;
  }
  BatchRunner runner(ctx, ops, pending);
  if (ctx.health().aborted() || ctx.health().poisonReaches(runner.pointToPoint())) {
    ctx.health().checkAbortAndPoison([] { return std::string("the start of an operation"); }, runner.pointToPoint());
  }
  // Latency path: a batch that finishes on its first step (a single operation done or ready early,
  // after the previous call's confirmation) needs none of the waiting machinery below.
  // (A limited run counts its first step against its busy time too.)
  const auto start = limit ? Clock::now() : Clock::time_point{};
  const bool movedFirst = runner.step();
  if (runner.finished()) return true;
  if (movedFirst && limit && Clock::now() - start > limit->busy) return false;
  // When the batch last moved: read when it first finds nothing to do (no clock read per move).
  Clock::time_point lastProgress{};
  const int spin = ctx.wait().spin;
  const int yields = ctx.wait().yields;
  const int sleepMs = static_cast<int>(std::clamp<int64_t>(ctx.wait().livenessPeriod.count(), 1, 100));
  const std::function<std::string()> what = [&] { return runner.pending(); };
  int idle = 0;
  bool slept = false;
  WaitNotice waitNotice(ctx);
  for (;;) {
    bool moved = runner.step();
    if (runner.finished()) return true;
    if (moved) {
      idle = 0;
      slept = false;
      if (limit && Clock::now() - start > limit->busy) return false;
      continue;
    }
    if (idle == 0) {
      lastProgress = Clock::now();
      ctx.flushRing();  // a peer may wait for what finished while this batch moved
    }
    if (slept || ctx.health().aborted()) {
      // Checked after a fresh step that found nothing to do, never on stale state.
      if (observer) runner.report(*observer);
      ctx.health().checkAbortAndPoison(what, runner.pointToPoint());
      if (std::string crossed = runner.crossedCall(); !crossed.empty()) ctx.health().fail(Status::kInvalidUsage, crossed);
      std::vector<int> waited = runner.waitedOn();
      auto first = std::find_if(waited.begin(), waited.end(), [&](int r) { return r != ctx.rank(); });
      const int across = runner.waitedAcross();
      waitNotice.publish(first == waited.end() ? -1 : *first, across);
      // A peer's failure that reached a request after this loop's step and before the reads
      // above hid the rank it names: the timeout below found no one waited for, and blamed none
      // (Campaign seed 4 under ASan: a rank alone on its host timed out on its own just as rank 0's
      // report of the stopped rank 1 failed its receive). A fresh step throws that failure, and one
      // that arrives after it leaves the reads naming the rank across, whose word the timeout waits for.
      if (runner.step()) {
        if (runner.finished()) return true;
        idle = 0;
        slept = false;
        continue;
      }
      if (runner.finished()) return true;
      if (int dead = ctx.health().findDeadPeer(waited); dead >= 0) {
        // What a dead rank published before exiting is final: one more step sees all of it.
        if (runner.step() || runner.finished()) continue;
        std::vector<int> still = runner.waitedOn();
        if (std::find(still.begin(), still.end(), dead) != still.end()) ctx.health().failDeadPeer(dead, what);
      }
      ctx.health().checkTimeout(lastProgress, what, waited, across);
      slept = false;
    }
    if (limit && idle >= limit->idlePolls) return false;
    if (++idle <= spin) {
      cpuRelax();
      continue;
    }
    if (limit || idle <= spin + yields) {  // a limited run yields and never sleeps
      sched_yield();
      continue;
    }
    // Sleep until a peer rings. Re-check after arming, so a ring between the last poll and the
    // arm is not lost.
    shm::Doorbell& bell = ctx.myBell();
    uint32_t token = bell.arm();
    moved = runner.step();
    if (!moved && !runner.finished()) bell.sleep(token, sleepMs);
    bell.disarm();
    if (runner.finished()) return true;
    if (moved) {
      idle = 0;
    } else {
      slept = true;
    }
  }
}

bool runQuick(Context& ctx, std::span<Op* const> ops, QuickStarted* started) {
  if (ops.size() > kQuickOps) return false;
  int keys[kQuickOps];
  for (size_t i = 0; i < ops.size(); ++i) {
    keys[i] = ops[i]->quickKey();
    if (keys[i] < 0 || std::find(keys, keys + i, keys[i]) != keys + i) return false;
  }
  if (ctx.health().aborted() || ctx.health().poisonReaches(true)) return false;
  QuickWait wait(ctx);
  for (;;) {
    bool moved = false;
    bool all = true;
    for (Op* op : ops) {
      if (op->done()) continue;
      moved |= op->progress(ctx);
      all = all && op->done();
    }
    if (started != nullptr) {
      (*started)();
      started = nullptr;
    }
    if (all) return true;
    if (moved) {
      wait.moved();
    } else if (!wait.idle(ctx)) {
      return false;
    }
  }
}

}  // namespace conflux
