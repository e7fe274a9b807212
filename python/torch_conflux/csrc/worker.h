// The backend's worker: one thread that runs the process group's operations in issue order (every
// rank issues the same sequence, as Conflux requires), so a method returns at once and async_op=True
// overlaps with the caller's compute. An operation is a closure making blocking Conflux calls; it
// throws on failure, and its Work carries the error. A synchronous call may instead run on the
// caller's thread when nothing is queued or running (runInlineIfIdle), as Conflux's own blocking
// calls do: no hand-off, no wake-up. At most one operation runs at a time, on either thread.
#pragma once

#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "work.h"

namespace torch_conflux {

class Worker {
 public:
  using Task = std::function<void()>;

  // spin: poll briefly for new work before sleeping (where Conflux's own waits spin).
  explicit Worker(bool spin);
  ~Worker();  // stop()
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void post(c10::intrusive_ptr<ConfluxWork> work, Task task);
  // Runs `task` now on the calling thread and returns true if nothing is queued or running;
  // otherwise returns false and leaves `task` untouched (post it).
  bool runInlineIfIdle(const c10::intrusive_ptr<ConfluxWork>& work, Task& task);
  // Blocks until nothing is queued or running (before the caller issues a CUDA call itself).
  void waitIdle();
  // Runs what is queued, then joins the thread. Idempotent.
  void stop() noexcept;

 private:
  struct Item {
    c10::intrusive_ptr<ConfluxWork> work;
    Task task;
  };
  void loop();
  // With the lock held: true when the front item may run, false when stopping with nothing left.
  bool waitForWork(std::unique_lock<std::mutex>& lock);
  bool ready() const { return !queue_.empty() && !running_; }
  bool idle() const { return queue_.empty() && !running_; }
  static void execute(ConfluxWork& work, Task& task);

  const bool spin_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable idle_;  // notified when the last queued operation ends
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool running_ = false;  // an operation is running (on the worker or inline)
  std::atomic<uint64_t> posted_{0};
  std::atomic<bool> sleeping_{false};
  std::thread thread_;
};

}  // namespace torch_conflux
