// The progress engine of one communicator. Batches of operations run strictly in submission
// order. A blocking call runs its batch on the caller's thread when nothing is queued (no thread
// hand-off on the latency path); otherwise, and for stream work, the batch is queued for the
// communicator's progress thread, started on first use.
//
// A batch that fails with anything but an argument error leaves the communicator failed: every
// later batch fails at once with the same status (as NCCL's async error), until it is destroyed.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "context.h"
#include "ops/op.h"
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

class Engine {
 public:
  // `onFailure` (optional) runs once, on the failing thread, when the engine latches a failure
  // (the communicator uses it to close its network connections, so remote peers stop at once).
  explicit Engine(Context& ctx, std::function<void(const Outcome&)> onFailure = {})
      : ctx_(ctx), onFailure_(std::move(onFailure)) {}
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs the batch and returns its outcome.
  Outcome runBlocking(Batch batch);
  // The same for one operation, without building a batch (the latency path).
  Outcome runBlocking(std::unique_ptr<Op> op);
  // Queues the batch for the progress thread; `done` (optional) is set when it finishes.
  void enqueue(Batch batch, std::shared_ptr<Completion> done);
  // Waits until everything queued has run.
  void drain();
  Outcome asyncError() const;

 private:
  // Runs ops on this thread; `checked`: the latched error was already checked under the lock.
  Outcome execute(std::span<const std::unique_ptr<Op>> ops, const std::vector<Stream*>& streams, bool checked);
  void threadMain();

  Context& ctx_;
  std::function<void(const Outcome&)> onFailure_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Item {
    Batch batch;
    std::shared_ptr<Completion> done;
  };
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stop_ = false;
  Outcome failed_;  // latched fatal error
  std::thread thread_;
};

}  // namespace conflux
