// What a staged collective needs from the memory the user's buffers live in and from the user's
// stream, as a small table of operations (NCCL's transports are such tables). Two engines
// implement it: CUDA's (copies on the device's copy engines, ordered by events and host-mapped
// flags) and the host engine (host memory, streams as ordered worker threads), which runs the same
// pipeline in the tests on machines without a GPU.
//
// Chunks are numbered by `seq`, which runs on across the calls of one pipeline; chunk `seq` uses
// staging slot seq % slots(). Every enqueue returns at once: the calling thread never waits.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace conflux::staged {

// `rows` rows of `width` bytes, `srcPitch` and `dstPitch` bytes apart. rows == 0: no copy.
struct Copy2D {
  const void* src;
  size_t srcPitch;
  void* dst;
  size_t dstPitch;
  size_t width;
  size_t rows;
};

class CopyEngine {
 public:
  virtual ~CopyEngine() = default;

  virtual int slots() const = 0;
  virtual size_t slotBytes() const = 0;
  virtual char* slot(int index) = 0;

  // A call starts: its copies run after the work already queued on `stream`.
  virtual void begin(void* stream) = 0;
  // Device -> the slot of `seq`, once the slot's previous chunk (seq - slots()) has been copied
  // out; then `seq`'s input is ready (also when rows == 0).
  virtual void copyIn(uint64_t seq, const Copy2D& copy) = 0;
  // The slot of `seq` -> device, once the host has released `seq`.
  virtual void copyOut(uint64_t seq, const Copy2D& copy) = 0;
  // A call ends: work queued on `stream` after it runs after its last copy out.
  virtual void end(void* stream) = 0;

  // Host side (the progress thread): blocks until `seq`'s input is in its slot. Throws
  // Error(kTimeout) when it has not arrived within `timeout` (the communicator's: the user's stream
  // never reached the call, or the device hangs), or the engine's own error (a failed copy).
  virtual void waitIn(uint64_t seq, std::chrono::milliseconds timeout) = 0;
  // Host side: `seq`'s result is in its slot (or, after an error, never will be): its copy out
  // may run. Releasing after an error is what keeps the user's stream from waiting forever.
  virtual void release(uint64_t seq) = 0;
};

}  // namespace conflux::staged
