#include "worker.h"

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
    queue_.push_back(Item{std::move(work), std::move(task)});
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

// Called with the lock held and the queue empty; returns false when the worker should exit.
bool Worker::waitForWork(std::unique_lock<std::mutex>& lock) {
  if (spin_) {
    const uint64_t seen = posted_.load(std::memory_order_acquire);
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kIdleSpin;
    while (posted_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    lock.lock();
    if (!queue_.empty()) return true;
  }
  sleeping_.store(true, std::memory_order_release);
  cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
  sleeping_.store(false, std::memory_order_release);
  return !queue_.empty();
}

void Worker::loop() {
  pthread_setname_np(pthread_self(), "cfx-torch");
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty() && (stopping_ || !waitForWork(lock))) return;
    if (queue_.empty()) continue;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr error;
    try {
      item.task();
    } catch (...) {
      error = std::current_exception();
    }
    item.task = nullptr;  // release captured tensors before waking the waiter
    item.work->complete(error);
    item.work.reset();
    lock.lock();
  }
}

}  // namespace torch_conflux
