#include "cuda_engine.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.h"
#include "common/log.h"

namespace conflux::staged {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Error(Status::kUnhandledCudaError, std::string(what) + ": " + cudaGetErrorString(e));
  }
}

// A flag write done by a host function on a stream (no stream memory operations).
struct FlagOp {
  volatile uint32_t* flag;
  uint32_t value;
};

void CUDART_CB writeHost(void* p) {
  auto* op = static_cast<FlagOp*>(p);
  std::atomic_thread_fence(std::memory_order_release);
  *op->flag = op->value;
  delete op;
}

template <class Fn>
Fn driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

constexpr unsigned kWaitGeq = 0x0;   // CU_STREAM_WAIT_VALUE_GEQ
constexpr unsigned kWriteDefault = 0x0;  // CU_STREAM_WRITE_VALUE_DEFAULT

// Makes `device` current on this thread for a scope, restoring the thread's device after (the
// progress thread's default is device 0, and the user's thread may have any device current).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

CudaEngine::CudaEngine(int device, int slots, size_t slotBytes, bool memOps)
    : device_(device),
      slots_(slots),
      slotBytes_(slotBytes),
      outDone_(static_cast<size_t>(slots), nullptr),
      inDone_(static_cast<size_t>(slots), nullptr),
      pendingOut_(static_cast<size_t>(slots)),
      queuedOut_(static_cast<size_t>(slots), 0) {
  DeviceGuard guard(device_);
  try {
    void* staging = nullptr;
    check(cudaHostAlloc(&staging, static_cast<size_t>(slots) * slotBytes, cudaHostAllocPortable),
          "cudaHostAlloc (staging)");
    staging_ = static_cast<char*>(staging);
    void* flags = nullptr;
    check(cudaHostAlloc(&flags, 2 * static_cast<size_t>(slots) * sizeof(uint32_t),
                        cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc (flags)");
    flags_ = static_cast<volatile uint32_t*>(flags);
    for (int i = 0; i < 2 * slots; ++i) flags_[i] = 0;
    void* flagsDevice = nullptr;
    check(cudaHostGetDevicePointer(&flagsDevice, flags, 0), "cudaHostGetDevicePointer");
    flagsDevice_ = reinterpret_cast<uintptr_t>(flagsDevice);
    check(cudaStreamCreateWithFlags(&in_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&out_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&begin_, cudaEventDisableTiming), "cudaEventCreate");
    check(cudaEventCreateWithFlags(&end_, cudaEventDisableTiming), "cudaEventCreate");
    for (auto& e : outDone_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    for (auto& e : inDone_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  } catch (...) {
    releaseResources();
    throw;
  }
  if (memOps) {
    waitValue_ = driverEntry<WaitValueFn>("cuStreamWaitValue32");
    writeValue_ = driverEntry<WriteValueFn>("cuStreamWriteValue32");
  }
  if (!waitValue_ || !writeValue_) {
    waitValue_ = nullptr;
    writeValue_ = nullptr;
  }
  logInfo("staged GPU path on device " + std::to_string(device_) + ": pipeline depth " + std::to_string(slots_) +
          " (CFX_CUDA_SLOTS) of " + std::to_string(slotBytes_) + "-byte chunks (CFX_CUDA_CHUNK_BYTES); " +
          (waitValue_ ? "stream memory operations (cuStreamWaitValue32) order the copies back"
                      : std::string("fallback: the host queues each copy back, and calls wait for slots (") +
                            (memOps ? "the driver has no stream memory operations" : "CFX_CUDA_MEMOPS=0") + ")"));
}

void CudaEngine::releaseResources() noexcept {
  if (in_) cudaStreamSynchronize(in_);
  if (out_) cudaStreamSynchronize(out_);
  for (auto e : outDone_) {
    if (e) cudaEventDestroy(e);
  }
  for (auto e : inDone_) {
    if (e) cudaEventDestroy(e);
  }
  if (begin_) cudaEventDestroy(begin_);
  if (end_) cudaEventDestroy(end_);
  if (in_) cudaStreamDestroy(in_);
  if (out_) cudaStreamDestroy(out_);
  if (flags_) cudaFreeHost(const_cast<uint32_t*>(flags_));
  if (staging_) cudaFreeHost(staging_);
}

CudaEngine::~CudaEngine() {
  // Best effort: nothing here may throw. Every chunk was released (Pipeline), so the streams finish.
  int previous = device_;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ && cudaSetDevice(device_) == cudaSuccess;
  releaseResources();
  if (switched) cudaSetDevice(previous);
}

void CudaEngine::writeInFlag(int slot, uint32_t value) {
  if (writeValue_) {
    if (writeValue_(in_, flagsDevice_ + slot * sizeof(uint32_t), value, kWriteDefault) != 0) {
      throw Error(Status::kUnhandledCudaError, "cuStreamWriteValue32 failed");
    }
    return;
  }
  check(cudaLaunchHostFunc(in_, writeHost, new FlagOp{flags_ + slot, value}), "cudaLaunchHostFunc");
}

void CudaEngine::queueCopyOut(uint64_t seq) {
  const int s = static_cast<int>(seq % slots_);
  Copy2D c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = pendingOut_[s];
  }
  DeviceGuard guard(device_);  // the progress thread's
  if (c.rows > 0) {
    check(cudaMemcpy2DAsync(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.rows, cudaMemcpyHostToDevice, out_),
          "cudaMemcpy2DAsync (staging to device)");
  }
  check(cudaEventRecord(outDone_[s], out_), "cudaEventRecord");
  {
    std::lock_guard<std::mutex> lock(mu_);
    queuedOut_[s] = generation(seq);
  }
  cv_.notify_all();
}

void CudaEngine::awaitCopyOutQueued(uint64_t seq) {
  const int s = static_cast<int>(seq % slots_);
  const uint32_t want = generation(seq);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return static_cast<int32_t>(queuedOut_[s] - want) >= 0; });
}

void CudaEngine::begin(void* stream) {
  DeviceGuard guard(device_);
  check(cudaEventRecord(begin_, static_cast<cudaStream_t>(stream)), "cudaEventRecord (the user's stream)");
  check(cudaStreamWaitEvent(in_, begin_, 0), "cudaStreamWaitEvent");
}

void CudaEngine::copyIn(uint64_t seq, const Copy2D& c) {
  DeviceGuard guard(device_);
  const int s = static_cast<int>(seq % slots_);
  if (seq >= static_cast<uint64_t>(slots_)) {
    if (!waitValue_) awaitCopyOutQueued(seq - slots_);  // its event is recorded only then
    check(cudaStreamWaitEvent(in_, outDone_[s], 0), "cudaStreamWaitEvent");
  }
  if (c.rows > 0) {
    check(cudaMemcpy2DAsync(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.rows, cudaMemcpyDeviceToHost, in_),
          "cudaMemcpy2DAsync (device to staging)");
  }
  check(cudaEventRecord(inDone_[s], in_), "cudaEventRecord");
  writeInFlag(s, generation(seq));
}

void CudaEngine::copyOut(uint64_t seq, const Copy2D& c) {
  const int s = static_cast<int>(seq % slots_);
  anyOut_ = true;
  lastOut_ = seq;
  if (!waitValue_) {
    std::lock_guard<std::mutex> lock(mu_);
    pendingOut_[s] = c;  // queued by release()
    return;
  }
  DeviceGuard guard(device_);
  // CUDA's own view of the dependency first (the copy in of this chunk, whose event was recorded by
  // copyIn just before), then the host's release.
  check(cudaStreamWaitEvent(out_, inDone_[s], 0), "cudaStreamWaitEvent");
  if (waitValue_(out_, flagsDevice_ + (slots_ + s) * sizeof(uint32_t), generation(seq), kWaitGeq) != 0) {
    throw Error(Status::kUnhandledCudaError, "cuStreamWaitValue32 failed");
  }
  if (c.rows > 0) {
    check(cudaMemcpy2DAsync(c.dst, c.dstPitch, c.src, c.srcPitch, c.width, c.rows, cudaMemcpyHostToDevice, out_),
          "cudaMemcpy2DAsync (staging to device)");
  }
  check(cudaEventRecord(outDone_[s], out_), "cudaEventRecord");
}

void CudaEngine::end(void* stream) {
  if (!waitValue_ && anyOut_) awaitCopyOutQueued(lastOut_);
  DeviceGuard guard(device_);
  check(cudaEventRecord(end_, out_), "cudaEventRecord");
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), end_, 0), "cudaStreamWaitEvent (the user's stream)");
}

void CudaEngine::waitIn(uint64_t seq, std::chrono::milliseconds timeout) {
  const int s = static_cast<int>(seq % slots_);
  const uint32_t want = generation(seq);
  const auto start = std::chrono::steady_clock::now();
  auto lastCheck = start;
  for (int spins = 0; static_cast<int32_t>(flags_[s] - want) < 0; ++spins) {
    if (spins < 1000) continue;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    const auto now = std::chrono::steady_clock::now();
    if (now - lastCheck < std::chrono::milliseconds(1)) continue;
    lastCheck = now;
    // A failed copy (an illegal address, a freed buffer) never writes its flag: CUDA's error, with
    // CUDA's words, instead of waiting out the timeout.
    DeviceGuard guard(device_);
    const cudaError_t e = cudaStreamQuery(in_);
    if (e != cudaSuccess && e != cudaErrorNotReady) check(e, "copying a chunk from the device to staging");
    if (now - start > timeout) {
      throw Error(Status::kTimeout, "the input of staged chunk " + std::to_string(seq) +
                                        " did not reach its staging slot within " + std::to_string(timeout.count()) +
                                        " ms (the user's stream never reached the call, or the device hangs)");
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

void CudaEngine::release(uint64_t seq) {
  if (!waitValue_) {
    queueCopyOut(seq);
    return;
  }
  std::atomic_thread_fence(std::memory_order_release);
  flags_[slots_ + seq % slots_] = generation(seq);
}

}  // namespace conflux::staged
