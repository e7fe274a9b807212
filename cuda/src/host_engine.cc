#include "host_engine.h"

#include <cstring>
#include <string>

#include "common/error.h"

namespace conflux::staged {

HostStream::HostStream() : thread_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void HostStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void HostStream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
}

void HostStream::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stop_, and everything queued has run
    auto task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void copy2D(const Copy2D& c) {
  for (size_t r = 0; r < c.rows; ++r) {
    std::memcpy(static_cast<char*>(c.dst) + r * c.dstPitch, static_cast<const char*>(c.src) + r * c.srcPitch, c.width);
  }
}

HostEngine::HostEngine(int slots, size_t slotBytes)
    : slots_(slots), slotBytes_(slotBytes), staging_(static_cast<size_t>(slots) * slotBytes) {
  for (auto& r : reached_) r.assign(static_cast<size_t>(slots), 0);
}

HostEngine::~HostEngine() {
  in_.synchronize();
  out_.synchronize();
}

void HostEngine::mark(Stage s, uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reached_[s][seq % slots_] = seq / slots_ + 1;
  }
  cv_.notify_all();
}

void HostEngine::await(Stage s, uint64_t seq) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return reached(s, seq); });
}

std::shared_ptr<bool> HostEngine::signalFrom(HostStream& s) {
  auto event = std::make_shared<bool>(false);
  s.enqueue([this, event] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      *event = true;
    }
    cv_.notify_all();
  });
  return event;
}

void HostEngine::waitOn(HostStream& s, std::shared_ptr<bool> event) {
  s.enqueue([this, event] {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return *event; });
  });
}

void HostEngine::begin(void* stream) { waitOn(in_, signalFrom(*static_cast<HostStream*>(stream))); }

void HostEngine::copyIn(uint64_t seq, const Copy2D& copy) {
  in_.enqueue([this, seq, copy] {
    if (seq >= static_cast<uint64_t>(slots_)) await(kOut, seq - slots_);
    copy2D(copy);
    mark(kIn, seq);
  });
}

void HostEngine::copyOut(uint64_t seq, const Copy2D& copy) {
  out_.enqueue([this, seq, copy] {
    await(kIn, seq);  // as CUDA's engine waits for the copy-in event: a chunk released after a failure
    await(kReleased, seq);  // without its input still goes out after it came in
    copy2D(copy);
    mark(kOut, seq);
  });
}

void HostEngine::end(void* stream) { waitOn(*static_cast<HostStream*>(stream), signalFrom(out_)); }

void HostEngine::waitIn(uint64_t seq, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return reached(kIn, seq); })) {
    throw Error(Status::kTimeout, "the input of staged chunk " + std::to_string(seq) + " did not reach its staging slot within " +
                                      std::to_string(timeout.count()) + " ms (the stream never reached the call?)");
  }
}

void HostEngine::release(uint64_t seq) { mark(kReleased, seq); }

}  // namespace conflux::staged
