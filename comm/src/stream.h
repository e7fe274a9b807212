// A host stream: a FIFO of work whose completion the caller can query or wait for. Work on a
// stream runs on its communicator's progress thread; the stream only counts it and keeps the first
// error. (In CUDA builds a device stream will be accepted here as well.)
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "outcome.h"

namespace conflux {

class Stream {
 public:
  static constexpr uint64_t kMagic = 0x43465853545245ull;  // "CFXSTRE"
  static constexpr uint64_t kDead = 0xdeadull;

  // Whether `p` looks like a live Stream (a stream handle from cfxStreamCreate).
  static bool valid(const void* p);

  void enqueued();
  void completed(const Outcome& o);
  // Waits for all enqueued work; returns (and clears) the first error.
  Outcome synchronize();
  // kInProgress while work is pending; otherwise like synchronize() without waiting.
  Outcome query();
  ~Stream() { magic_ = kDead; }

 private:
  uint64_t magic_ = kMagic;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t pending_ = 0;
  Outcome error_;
};

}  // namespace conflux
