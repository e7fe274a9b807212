// The copy engine for CUDA device memory (hfreduce's GPU path), on the copy engines only: no
// kernel of Conflux's runs on the GPU.
//
// Mechanism. Staging is pinned host memory. A call first makes the inbound stream wait for the
// user's stream (an event). Chunk `seq` is copied device -> slot on the inbound stream, after the
// slot's previous chunk has been copied out (an event recorded on the outbound stream); the inbound
// stream then records the slot's "in" event and writes the slot's generation to a host-mapped flag,
// which the progress thread polls (waitIn). The outbound stream waits for the "in" event (so CUDA
// itself sees that the copy out depends on the copy in, as the stream memory operations' documentation
// asks: the scheduler must never put the copy in behind the wait below), then until the host writes
// the generation to the slot's "released" flag (cuStreamWaitValue32 on host-mapped memory), and
// copies slot -> device. At the end of a call the user's stream waits for the outbound stream (an
// event), so work queued after the call sees its result and the calling thread never blocks.
//
// Where the driver lacks stream memory operations, or CFX_CUDA_MEMOPS=0 (said at INFO), the inbound
// flag is written by a host function on the inbound stream, and the host itself queues each copy out
// when it releases the chunk; the calling thread then waits where a stream would have: before
// reusing a slot whose copy out is not queued yet, and at the end of a call for its last copy out.
// (A host function that waited on a stream would block CUDA's callback thread, which the inbound
// flags need.) Generations compare modulo 2^32 (CU_STREAM_WAIT_VALUE_GEQ), so flags never need
// resetting and never alias (ABA) while fewer than 2^31 generations are in flight.
//
// Every entry point makes the engine's device current on the calling thread for its duration
// (the user's thread, the progress thread), and restores the caller's device after.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "copy_engine.h"

namespace conflux::staged {

class CudaEngine : public CopyEngine {
 public:
  // `slots` slots of `slotBytes` each, for buffers on `device`; `memOps`: use stream memory
  // operations where the driver has them. Throws Error(kUnhandledCudaError) with CUDA's message.
  CudaEngine(int device, int slots, size_t slotBytes, bool memOps);
  ~CudaEngine() override;
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  int slots() const override { return slots_; }
  size_t slotBytes() const override { return slotBytes_; }
  char* slot(int index) override { return staging_ + static_cast<size_t>(index) * slotBytes_; }

  // `stream` is a cudaStream_t (NULL: the legacy default stream).
  void begin(void* stream) override;
  void copyIn(uint64_t seq, const Copy2D& copy) override;
  void copyOut(uint64_t seq, const Copy2D& copy) override;
  void end(void* stream) override;
  void waitIn(uint64_t seq, std::chrono::milliseconds timeout) override;
  void release(uint64_t seq) override;

  bool streamMemOps() const { return waitValue_ != nullptr; }

 private:
  using WaitValueFn = int (*)(cudaStream_t, uintptr_t, uint32_t, unsigned);
  using WriteValueFn = int (*)(cudaStream_t, uintptr_t, uint32_t, unsigned);
  uint32_t generation(uint64_t seq) const { return static_cast<uint32_t>(seq / slots_ + 1); }
  void writeInFlag(int slot, uint32_t value);
  // Without stream memory operations: queues the copy out of `seq` (the host released it).
  void queueCopyOut(uint64_t seq);
  // Without stream memory operations: blocks until the copy out of `seq` is queued.
  void awaitCopyOutQueued(uint64_t seq);
  // Frees whatever the constructor got (also when it throws part way).
  void releaseResources() noexcept;

  int device_;
  int slots_;
  size_t slotBytes_;
  char* staging_ = nullptr;
  // Host-mapped flags: [0, slots) inbound done, [slots, 2 slots) released by the host.
  volatile uint32_t* flags_ = nullptr;
  uintptr_t flagsDevice_ = 0;
  cudaStream_t in_ = nullptr, out_ = nullptr;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  std::vector<cudaEvent_t> outDone_;  // per slot: its last copy out finished
  std::vector<cudaEvent_t> inDone_;   // per slot: its last copy in finished
  WaitValueFn waitValue_ = nullptr;
  WriteValueFn writeValue_ = nullptr;
  // Without stream memory operations: each slot's pending copy out, and the generation whose copy
  // out has been queued.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Copy2D> pendingOut_;
  std::vector<uint32_t> queuedOut_;
  bool anyOut_ = false;
  uint64_t lastOut_ = 0;  // the last chunk given to copyOut (the submitting thread's)
};

}  // namespace conflux::staged
