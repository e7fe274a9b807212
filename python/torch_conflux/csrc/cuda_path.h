// CUDA tensors in the backend: Conflux's staged path (libconflux_cuda, hfreduce's GPU data path)
// on torch's current stream. A call is queued on the stream and returns at once; the stream's later
// work sees the result, as with NCCL's backend. One staged path per process group, made at the
// first CUDA call on the device of its tensors; a later call on another device is refused.
//
// The staged path and the host path share one Conflux communicator, so they never run at once: the
// backend drains its worker before it issues a CUDA call, and a host call waits (synchronize) for
// the host part of the CUDA calls before it. A build without libconflux_cuda (cuda_path_none.cc)
// refuses CUDA tensors with a message saying so.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>

#include "comm.h"

namespace torch_conflux {

enum class CudaColl { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll, kSend, kRecv };

// One cfxCuda* call. `count` is the element count the C API takes for that collective (AllGather:
// per rank sent; ReduceScatter: per rank received; AlltoAll: per peer).
struct CudaCall {
  CudaColl coll;
  const void* send;  // nullptr for kRecv
  void* recv;        // nullptr for kSend
  size_t count;
  cfxDataType_t type;
  cfxRedOp_t op = cfxSum;
  int root = 0;  // the root, or the peer of kSend/kRecv
};

class CudaPath {
 public:
  explicit CudaPath(std::shared_ptr<Communicator> comm);
  ~CudaPath();  // close()
  CudaPath(const CudaPath&) = delete;
  CudaPath& operator=(const CudaPath&) = delete;

  // True when this build of the backend has Conflux's CUDA path.
  static bool built();

  // Queues `call` on `stream` (a cudaStream_t of CUDA device `device`, current on this thread).
  // Throws c10::DistBackendError "conflux <method> failed on rank R of N: ..." on failure, and
  // c10::Error when the tensors are on another device than this path's.
  void issue(const char* method, const CudaCall& call, int device, void* stream);
  // Waits until the host part of every issued call has run; at once when none was ever issued.
  void synchronize(const char* method);
  // Throws when an issued call has failed since (a dead peer, a timeout): its streams were
  // released and its results are undefined.
  void checkAsync(const char* method);
  // Frees the staging once its calls have ended (abort the communicator first to end them at once
  // rather than wait for peers). Idempotent; never throws.
  void close() noexcept;

 private:
  struct Staged;  // defined by the build's implementation
  std::shared_ptr<Communicator> comm_;
  std::mutex mutex_;
  std::unique_ptr<Staged> staged_;
  std::atomic<bool> used_{false};
};

}  // namespace torch_conflux
