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

class BatchRunner {
 public:
  BatchRunner(Context& ctx, std::span<const std::unique_ptr<Op>> ops) : ctx_(ctx), ops_(ops) {
    // Busy flags are only needed when point-to-point operations are present.
    // Peers are communicator ranks, which may exceed the local ranks of this context.
    for (auto& op : ops_) {
      if (op->isPointToPoint() && op->peer() >= static_cast<int>(sendBusy_.size())) {
        sendBusy_.resize(op->peer() + 1);
        recvBusy_.resize(op->peer() + 1);
      }
    }
  }

  // One pass over the batch. Returns whether anything moved; sets finished_ when all are done.
  bool step() {
    bool moved = false;
    finished_ = true;
    bool collectiveActive = false;
    std::fill(sendBusy_.begin(), sendBusy_.end(), 0);
    std::fill(recvBusy_.begin(), recvBusy_.end(), 0);
    for (auto& op : ops_) {
      if (op->done()) continue;
      finished_ = false;
      if (!op->isPointToPoint()) {
        if (collectiveActive) continue;
        collectiveActive = true;
      } else {
        auto& busy = op->isSend() ? sendBusy_ : recvBusy_;
        if (busy[op->peer()]) continue;
        busy[op->peer()] = 1;
      }
      moved |= op->progress(ctx_);
    }
    if (moved && !finished_) finished_ = std::all_of(ops_.begin(), ops_.end(), [](auto& o) { return o->done(); });
    return moved;
  }

  bool finished() const { return finished_; }

  std::vector<int> waitedOn() const {
    std::vector<int> ranks;
    for (auto& op : ops_) {
      if (!op->done()) op->waitingOn(ctx_, ranks);
    }
    return ranks;
  }

  std::string pending() const {
    std::string s;
    for (auto& op : ops_) {
      if (op->done()) continue;
      if (!s.empty()) s += "; ";
      s += op->describe(ctx_);
    }
    return s;
  }

 private:
  Context& ctx_;
  std::span<const std::unique_ptr<Op>> ops_;
  std::vector<char> sendBusy_;
  std::vector<char> recvBusy_;
  bool finished_ = false;
};

}  // namespace

bool executeBatch(Context& ctx, std::span<const std::unique_ptr<Op>> ops, const RunLimit* limit) {
  using Clock = std::chrono::steady_clock;
  if (ctx.poisoned() || ctx.aborted()) ctx.checkAbortAndPoison([] { return std::string("the start of an operation"); });
  // Latency path: a single operation that completes on its first step needs none of the waiting
  // machinery below.
  if (ops.size() == 1 && !ops[0]->isPointToPoint()) {
    ops[0]->progress(ctx);
    if (ops[0]->done()) return true;
  }
  BatchRunner runner(ctx, ops);
  const auto start = Clock::now();
  auto lastProgress = start;
  const int spin = ctx.wait().spin;
  const int sleepMs = static_cast<int>(std::clamp<int64_t>(ctx.wait().livenessPeriod.count(), 1, 100));
  const std::function<std::string()> what = [&] { return runner.pending(); };
  int idle = 0;
  bool slept = false;
  for (;;) {
    bool moved = runner.step();
    if (runner.finished()) return true;
    if (moved) {
      idle = 0;
      slept = false;
      lastProgress = Clock::now();
      if (limit && lastProgress - start > limit->busy) return false;
      continue;
    }
    if (slept || ctx.aborted()) {
      // Checked after a fresh step that found nothing to do, never on stale state.
      ctx.checkAbortAndPoison(what);
      if (int dead = ctx.findDeadPeer(runner.waitedOn()); dead >= 0) {
        // What a dead rank published before exiting is final: one more step sees all of it.
        if (runner.step() || runner.finished()) continue;
        std::vector<int> still = runner.waitedOn();
        if (std::find(still.begin(), still.end(), dead) != still.end()) ctx.failDeadPeer(dead, what);
      }
      ctx.checkTimeout(lastProgress, what);
      slept = false;
    }
    if (limit && idle >= limit->idlePolls) return false;
    if (++idle <= spin) {
      cpuRelax();
      continue;
    }
    if (idle <= spin + kWaitYields) {
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
      lastProgress = Clock::now();
    } else {
      slept = true;
    }
  }
}

}  // namespace conflux
