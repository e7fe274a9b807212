// The progress engine of one communicator. Batches of operations run strictly in submission
// order. Work runs on the calling thread whenever no other thread is running this engine's work:
// a blocking call runs its batch to completion there (no thread hand-off on the latency path);
// enqueued (stream) work, with any queued work not yet started ahead of it, is tried there for as
// long as a blocking wait would spin, then for up to kEagerYields yields, and for at most
// kEagerBusy of moving data. When the peers are already there and the message is small it
// completes with no hand-off at all, as a blocking call does; otherwise the
// communicator's progress thread (started on first use) takes it over from where it stopped, so
// the call still returns within a bounded time.
//
// A batch that fails with anything but an argument error leaves the communicator failed: every
// later batch fails at once with the same status (as NCCL's async error), until it is destroyed.
//
// A batch of one collective returns once that collective is ready early (Op::readyEarly: a
// latency-path call whose output is final before every rank has arrived), while fewer than
// CFX_RUNAHEAD earlier calls await their confirmation. The engine keeps it and confirms it first
// in later batches: each batch progresses the confirmations oldest first, and cannot finish while
// CFX_RUNAHEAD of them (any, for a batch that may not run ahead) are left. So a call whose peers
// called something else fails within the next CFX_RUNAHEAD calls (1: the next call) at the latest.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "context.h"
#include "executor.h"
#include "flight/dump.h"
#include "flight/recorder.h"
#include "ops/mailbox_op.h"
#include "ops/op.h"
#include "ops/p2p.h"
#include "outcome.h"
#include "stream.h"

namespace conflux {

struct Batch {
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<Stream*> streams;  // told when the batch completes
};

class Completion {
 public:
  void set(const Outcome& o);
  Outcome wait();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Outcome outcome_;
};

// The heap copy of an operation that runQuick ran as the caller's value and that now has to wait.
class QuickSpill {
 public:
  virtual std::unique_ptr<Op> toHeap() = 0;

 protected:
  ~QuickSpill() = default;
};

class Engine {
 public:
  // `onFailure` (optional) runs once, on the failing thread, when the engine latches a failure
  // (the communicator uses it to close its network connections, so remote peers stop at once).
  // `recorder` (optional) is told when operations start, wait and end (flight/recorder.h).
  explicit Engine(Context& ctx, std::function<void(const Outcome&)> onFailure = {},
                  flight::Recorder* recorder = nullptr)
      : ctx_(ctx), onFailure_(std::move(onFailure)), recorder_(recorder), observer_(recorder) {}
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs the batch and returns its outcome.
  Outcome runBlocking(Batch batch);
  // The same for operations the caller holds, without building a batch (the latency path): they
  // are moved out of `ops` only if they have to wait for work queued before them.
  Outcome runBlocking(std::span<std::unique_ptr<Op>> ops);
  Outcome runBlocking(std::unique_ptr<Op> op) { return runBlocking(std::span<std::unique_ptr<Op>>(&op, 1)); }
  // Queues the batch; `done` (optional) is set when it finishes. Tried here first, bounded, when
  // no thread is running this engine's work.
  void enqueue(Batch batch, std::shared_ptr<Completion> done);
  // The same for operations on one stream (the latency path on a stream): no batch is built, and
  // nothing is moved out of `ops`, unless they have to wait for the progress thread.
  void enqueue(std::span<std::unique_ptr<Op>> ops, Stream* stream);
  void enqueue(std::unique_ptr<Op> op, Stream* stream) { enqueue(std::span<std::unique_ptr<Op>>(&op, 1), stream); }
  // A group's small sends and receives, held by the caller as values (api/group.cc), run here by
  // runQuick (executor.h) when no thread runs this engine's work, nothing is queued or failed and no
  // earlier call awaits its confirmation; they are recorded first. Returns false, with nothing
  // recorded or run, when they cannot be. Else true: they are done, or the ones that must wait were
  // copied to the heap and took the usual path from where they stopped, run to the end here when
  // `stream` is null (the outcome in `out`) or left with the progress thread for `stream`.
  bool runQuick(std::span<P2pOp> ops, Stream* stream, Outcome& out);
  // A latency-path collective outside a group, held by the caller as a value (api/group.cc): run
  // here (runExpress, executor.h) when no thread runs this engine's work and nothing is queued or
  // failed, after the earlier calls' confirmations; recorded first as `call`. Returns false, with
  // nothing recorded or run, when the engine is not idle. Else true: it is done; or ready early,
  // then copied to the heap to be confirmed by later calls; or copied there and taking the usual
  // path from where it stopped, as runQuick above.
  bool runQuick(MailboxOp& op, const flight::Call& call, Stream* stream, Outcome& out);
  // The same for another operation that may run ahead (Op::runsAhead; the v-collectives' check on
  // the mailboxes), with `spill` for its heap copies.
  bool runQuick(Op& op, const flight::Call& call, Stream* stream, Outcome& out, QuickSpill& spill);
  // Waits until everything queued has run.
  void drain();
  // The latched failure; else a failure of a peer that reaches this rank's next operation.
  Outcome asyncError() const;

 private:
  // Runs ops on this thread; `checked`: the latched error was already checked under the lock.
  Outcome execute(std::span<std::unique_ptr<Op>> ops, const std::vector<Stream*>& streams, bool checked);
  // Runs ops (after confirming the previous call, if it returned early) until they finish or reach
  // `limit` (optional); latches a failure; keeps a last operation that finished early. Sets `finished`.
  Outcome attempt(std::span<std::unique_ptr<Op>> ops, const RunLimit* limit, bool& finished);
  // enqueue(ops, stream) once the engine is claimed: tried here, bounded, then left to the progress
  // thread; releases the engine.
  void runClaimed(std::span<std::unique_ptr<Op>> ops, Stream* stream);
  // After a call finished: `op`, when it returned before its own confirmation (Op::readyEarly),
  // joins early_ by its number.
  void keepEarly(const Op& op);
  // Both runQuick for one operation: `toHeap()` makes its heap copy (QuickSpill).
  template <class ToHeap>
  bool runQuickWith(Op& op, const flight::Call& call, Stream* stream, Outcome& out, ToHeap&& toHeap);
  void threadMain();

  // Moves the caller's operations into a vector of their own (to queue them).
  static std::vector<std::unique_ptr<Op>> takeOps(std::span<std::unique_ptr<Op>> ops);
  // Operations that will not run because the communicator failed earlier.
  void recordRefused(std::span<const std::unique_ptr<Op>> ops);
  // The communicator call of the first unfinished operation (Op::callSeq), for a failure.
  static uint32_t failedCallOf(std::span<std::unique_ptr<Op>> ops, const EarlyCalls& early);

  Context& ctx_;
  std::function<void(const Outcome&)> onFailure_;
  flight::Recorder* recorder_;
  struct Observer final : WaitObserver {
    explicit Observer(flight::Recorder* r) : rec(r) {}
    void waiting(const Op& op, const std::vector<int>& ranks, const std::string& what) const override {
      rec->waiting(op.flightId, ranks, what);
      flight::dumpIfRequested();
    }
    flight::Recorder* rec;
  } observer_;
  // Wakes the waiters the state now concerns (called with mu_ held, after the gate or queue_
  // changed; it sets kAttention first): the progress thread when there is queued work, drain() and
  // the destructor when all is done. Nobody is woken for nothing: on the stream path an idle
  // progress thread costs no wake-up.
  void notifyLocked();

  // Who runs this engine's work, as one word a caller can claim without the mutex. kBusy: a thread
  // runs it. kAttention: something needs the mutex's path (queued work, a latched failure, a thread
  // waiting for the engine to go idle, the destructor); it changes only under mu_. A call that
  // finds the word 0 claims kBusy with one compare-and-swap and gives it back with another (two
  // atomic operations where the mutex took four, on every latency-path call); a release that finds
  // kAttention set takes mu_ and wakes whoever waits.
  static constexpr uint32_t kBusy = 1;
  static constexpr uint32_t kAttention = 2;
  bool claimFast();
  bool claimLocked();  // mu_ held; false when another thread runs the work
  bool busyLocked() const { return (gate_.load(std::memory_order_acquire) & kBusy) != 0; }
  void release();        // mu_ not held
  // A call that finished on the quick paths: releases the engine, then wakes the peers its
  // publication owes a ring (Context::flushRing), the release's locked instruction ordering the
  // publication before the doorbells' loads in place of ringAll's fence: one locked instruction
  // per call fewer, and the one that waits for the publication's line is the last.
  void releaseAndRing();
  void releaseLocked();  // mu_ held (call notifyLocked after)
  void setAttentionLocked();

  mutable std::mutex mu_;
  std::condition_variable work_;  // the progress thread waits here
  std::condition_variable idle_;  // drain() and the destructor wait here
  int idleWaiters_ = 0;
  struct Item {
    Batch batch;
    std::shared_ptr<Completion> done;
    bool counted = false;  // its streams were told (enqueued); always so once queued
  };
  // Runs an item here until it finishes (then tells its streams and `done`; returns true) or
  // reaches `limit` (returns false; the ops keep their state).
  bool runItem(Item& item, const RunLimit* limit);
  static void countStreams(Item& item);
  // Idle polls that yield the core before enqueued work tried here is handed to the progress
  // thread (after the spin). Waking that thread costs far more than a yield when ranks share
  // cores (4 ranks on 2 cores: 8 yields gave 7-17 us per 8 B AllReduce on a stream, 512 gave 4).
  static constexpr int kEagerYields = 512;
  // And the time it may spend moving a large message before the caller gets its thread back
  // (stream work must overlap with the caller's computation).
  static constexpr std::chrono::microseconds kEagerBusy{50};
  // A latency-path call on a stream (a mailbox collective, small Send/Recv: Op::runsAhead,
  // Op::quickKey) that finds the progress thread running earlier work waits up to kCatchUp,
  // yielding, for it to finish, then runs here (claimWhenIdle). Otherwise, once one call has been
  // handed over, the caller queues every later call faster than the progress thread (which shares
  // the cores with it) runs them, and a run of small calls never comes back to this thread:
  // 2-rank Reduce of 64 B on a stream took 0.25 us per call over 5000 calls and 0.70-1.04 us over
  // 3 million. Larger calls do not wait: they gain nothing, and the yields took cores from the
  // progress threads (2-rank AllReduce of 1-16 MiB, 5-13% slower).
  static constexpr std::chrono::microseconds kCatchUp{50};
  bool claimWhenIdle();
  std::deque<Item> queue_;
  std::atomic<uint32_t> gate_{0};
  bool stop_ = false;
  Outcome failed_;  // latched fatal error
  // The calls that returned ready early, oldest first, until each is confirmed (at most
  // WaitSettings::runAhead; only the thread running this engine's work touches them).
  EarlyCalls early_;
  std::thread thread_;
};

}  // namespace conflux
