// Drives a batch of operations to completion on the calling thread. Collectives run one after
// another in issue order; point-to-point operations all progress together, one at a time per
// (peer, direction), which is what lets grouped sends and receives complete without deadlock.
//
// Waiting: poll CFX_SPIN times, then yield the core CFX_YIELDS times, then sleep on this rank's futex
// doorbell until a peer rings it. Sleeping waiters wake periodically to check for abort, a
// poisoned communicator, dead peers and the timeout.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "context.h"
#include "ops/early_calls.h"
#include "ops/op.h"

namespace conflux {

// How long a bounded run (an eager attempt, engine.h) may go on before it gives the batch back.
struct RunLimit {
  int idlePolls;                   // polls in a row that moved nothing (spinning, then yielding)
  std::chrono::microseconds busy;  // time spent while still moving (a large message)
};

// Told, each time a wait wakes from sleep, what each unfinished operation of the batch waits for
// (the flight recorder keeps it): `ranks` are communicator ranks, `what` the text a timeout
// would report.
class WaitObserver {
 public:
  virtual void waiting(const Op& op, const std::vector<int>& ranks, const std::string& what) const = 0;

 protected:
  ~WaitObserver() = default;
};

// Throws Error on failure (after poisoning the communicator where peers would otherwise hang).
// Returns true once every operation is done; a batch of one collective also once that one is ready
// early (Op::readyEarly: its output is final, its confirmation is left to later batches), if fewer
// than ctx.wait().runAhead earlier calls still await theirs.
// `pending`: the earlier calls that returned ready early, oldest first (the engine's); they are
// confirmed first, in order (each leaves `pending` then), and must be before the batch is done.
// A collective that may run ahead (Op::runsAhead) starts while fewer than runAhead of them are
// unconfirmed; any other waits for all. With a `limit` it never sleeps: once the limit is reached it returns false, and the
// operations keep their state for a later call (possibly on another thread).
bool executeBatch(Context& ctx, std::span<const std::unique_ptr<Op>> ops, const RunLimit* limit,
                  const WaitObserver* observer, EarlyCalls& pending);

// The usual group of small sends and receives (a SendRecv, a halo exchange) without the batch
// machinery: at most kQuickOps operations, each quick (Op::quickKey) and on a different (peer,
// direction), with nothing aborted or poisoned, polled until all are done, for at most a quarter
// of a wait's spin, or, where ranks share cores (no spin), kQuickYields yields of the core.
// Returns false otherwise, every operation's state kept for the full run (which then checks,
// spins, yields and sleeps as always). Throws what progress throws. The caller confirms first
// that no earlier call awaits its confirmation (executeBatch's `pending`).
// `started` (optional) runs once, after the first pass has published what the sends could: the
// caller's bookkeeping then overlaps the peers' replies rather than delaying its own sends.
inline constexpr size_t kQuickOps = 8;
inline constexpr int kQuickYields = 4;
inline constexpr size_t kConfirmStride = 8;
class QuickStarted {
 public:
  virtual void operator()() = 0;

 protected:
  ~QuickStarted() = default;
};
bool runQuick(Context& ctx, std::span<Op* const> ops, QuickStarted* started = nullptr);

// The latency path's usual call, without the batch machinery: one collective that may run ahead
// (Op::runsAhead), nothing aborted or poisoned, and one pass over the earlier calls' confirmations
// (`pending`, oldest first; only once half the window awaits them, from there every
// kConfirmStride calls, and when the window is full, so that one look at the peers confirms many)
// and the call finishes it, done or ready early within the window, polled for as
// long as runQuick polls (a quarter of a wait's spin, or kQuickYields yields where ranks share
// cores): the full run copies the call to the heap and sets up its waiting first (2-rank AlltoAllv
// of 8 B about 10% faster, 4-rank Broadcast and AllGather of 8-64 B 17-20%; perf/RESULTS.md,
// 2026-12-02 (third)). Returns false otherwise, every operation's state kept for the full run.
// Throws what progress throws. The caller then rings the peers a finished operation owes
// (Context::flushRing).
bool runExpress(Context& ctx, Op& op, EarlyCalls& pending);

}  // namespace conflux
