// The copy engine for host memory: each "stream" is a worker thread running its tasks in order,
// like a CUDA stream; copies are memcpy. It runs the staged pipeline on machines without a GPU (the
// tests) with the same ordering rules the CUDA engine gets from events and stream waits.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "copy_engine.h"

namespace conflux::staged {

// An ordered queue of host tasks on its own thread; the stand-in for a CUDA stream.
class HostStream {
 public:
  HostStream();
  ~HostStream();  // finishes what is queued
  HostStream(const HostStream&) = delete;
  HostStream& operator=(const HostStream&) = delete;

  void enqueue(std::function<void()> task);
  void synchronize();

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

class HostEngine : public CopyEngine {
 public:
  HostEngine(int slots, size_t slotBytes);
  ~HostEngine() override;

  int slots() const override { return slots_; }
  size_t slotBytes() const override { return slotBytes_; }
  char* slot(int index) override { return staging_.data() + static_cast<size_t>(index) * slotBytes_; }

  // `stream` is a HostStream*.
  void begin(void* stream) override;
  void copyIn(uint64_t seq, const Copy2D& copy) override;
  void copyOut(uint64_t seq, const Copy2D& copy) override;
  void end(void* stream) override;
  void waitIn(uint64_t seq, std::chrono::milliseconds timeout) override;
  void release(uint64_t seq) override;

 private:
  // Per slot, how many chunks of it have reached a stage (chunk seq is the (seq / slots)-th of its slot).
  enum Stage { kIn, kReleased, kOut, kStages };
  void mark(Stage s, uint64_t seq);
  void await(Stage s, uint64_t seq);
  bool reached(Stage s, uint64_t seq) const { return reached_[s][seq % slots_] >= seq / slots_ + 1; }
  // A one-shot event between streams.
  std::shared_ptr<bool> signalFrom(HostStream& s);
  void waitOn(HostStream& s, std::shared_ptr<bool> event);

  int slots_;
  size_t slotBytes_;
  std::vector<char> staging_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<uint64_t> reached_[kStages];
  HostStream in_, out_;
};

void copy2D(const Copy2D& c);

}  // namespace conflux::staged
