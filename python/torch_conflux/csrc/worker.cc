#include "worker.h"

#include <c10/util/Exception.h>
#include <pthread.h>

#include <chrono>

namespace torch_conflux {

namespace {
// How long an idle worker polls for the next operation before sleeping on the condition variable.
constexpr auto kIdleSpin = std::chrono::microseconds(50);
}  // namespace

Worker::Worker(bool spin) : spin_(spin), thread_([this] { loop(); }) {}

Worker::~Worker() { stop(); }

void Worker::post(c10::intrusive_ptr<ConfluxWork> work, Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(Item{std::move(work), std::move(task)});
      work.reset();
    }
  }
  if (work) {  // after shutdown or abort nothing would run it: fail it now rather than hang its waiter
    std::exception_ptr error;
    try {
      C10_THROW_ERROR(DistBackendError, "conflux: the process group has been shut down or aborted");
    } catch (...) {
      error = std::current_exception();
    }
    work->complete(error);
    return;
  }
  posted_.fetch_add(1, std::memory_order_release);
  if (sleeping_.load(std::memory_order_acquire)) cv_.notify_one();
}

void Worker::stop() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool Worker::runInlineIfIdle(const c10::intrusive_ptr<ConfluxWork>& work, Task& task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty() || running_ || stopping_) return false;
    running_ = true;
  }
  execute(*work, task);
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
    wake = !queue_.empty() && sleeping_.load(std::memory_order_acquire);
  }
  if (wake) cv_.notify_one();  // items posted meanwhile (from another thread) waited for this one
  idle_.notify_all();
  return true;
}

void Worker::execute(ConfluxWork& work, Task& task) {
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  task = nullptr;  // release captured tensors before waking the waiter
  work.complete(error);
}

bool Worker::waitForWork(std::unique_lock<std::mutex>& lock) {
  if (ready()) return true;
  if (spin_ && !stopping_) {
    const uint64_t seen = posted_.load(std::memory_order_acquire);
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kIdleSpin;
    while (posted_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    lock.lock();
    if (ready()) return true;
  }
  sleeping_.store(true, std::memory_order_release);
  cv_.wait(lock, [&] { return ready() || (stopping_ && queue_.empty()); });
  sleeping_.store(false, std::memory_order_release);
  return ready();
}

void Worker::loop() {
  pthread_setname_np(pthread_self(), "cfx-torch");
  std::unique_lock<std::mutex> lock(mutex_);
  while (waitForWork(lock)) {
    Item item = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    execute(*item.work, item.task);
    item.work.reset();
    lock.lock();
    running_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  idle_.notify_all();
}

void Worker::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return idle(); });  // the loop ends only with nothing queued
}

}  // namespace torch_conflux
