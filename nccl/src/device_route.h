// Device buffers in the shim. In a build with CUDA (libconflux_cuda), a call whose buffers are CUDA
// device memory goes through Conflux's staged path on the caller's stream, with NCCL's stream
// semantics (the call returns at once; the stream sees the result). Host buffers keep the blocking
// host path. Without CUDA (device_route_host.cc) every buffer is host memory.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "nccl_abi.h"

struct ncclComm;

namespace cfx_nccl {

enum class DeviceColl { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll, kSend, kRecv };

struct DeviceCall {
  DeviceColl coll;
  const void* send;  // NULL for kRecv
  void* recv;        // NULL for kSend
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;  // a built-in op; PreMulSum is refused on device buffers
  int root;        // the root, or the peer of kSend/kRecv
  cudaStream_t stream;
};

// Submits `call` to the staged path and returns true when its buffers are device memory and the
// staged path has the call; returns false otherwise (host buffers; on device buffers a PreMulSum op
// or a Send/Recv inside a group, which the caller runs through a HostView), after waiting for the
// staged work already queued on `c` (so the host path never runs beside it). Throws ShimError for
// mixed buffers.
bool runOnDevice(ncclComm& c, const DeviceCall& call);

// Host copies of device buffers, for what the staged path lacks (PreMulSum, Gather, Scatter,
// grouped Send/Recv). Host buffers pass through untouched. For device buffers the calling thread
// waits for the staged work and for `stream`, `sendBytes` of `send` are copied to host memory, the
// host path runs on send() and recv(), and done() copies `recvBytes` back into `recv` on `stream`
// and waits for it (inside a group: after the outermost ncclGroupEnd has run the group). The copies
// live until then. Mixed host and device buffers are ncclInvalidArgument.
class HostView {
 public:
  // `stream` is the call's cudaStream_t (as void*: this header's cudaStream_t is nccl_abi.h's, the
  // CUDA file's is CUDA's own, and a parameter's type would differ between them).
  HostView(ncclComm& c, const void* send, size_t sendBytes, void* recv, size_t recvBytes, void* stream);
  const void* send() const { return send_; }
  void* recv() const { return recv_; }
  void done();

 private:
  const void* send_;
  void* recv_;
  void* device_ = nullptr;  // the device recv buffer, when bounced
  size_t recvBytes_ = 0;
  void* stream_;
  std::shared_ptr<std::vector<char>> sendCopy_;  // the host copy of send, which send() points into
  std::shared_ptr<std::vector<char>> copies_;    // the host copy of recv
};
// The staged path's first failure, or ncclSuccess.
ncclResult_t deviceAsyncError(ncclComm& c);
// Before the communicator goes: waits for (or, when aborting, fails) the staged work and frees it.
void retireDevice(ncclComm& c);
// Waits until the host part of every staged call of `c` has run (ncclCommFinalize, ncclCommSuspend);
// throws ShimError with the staged path's first failure.
void drainDevice(ncclComm& c);
// The CUDA device current on this thread (0 without CUDA), which a new communicator belongs to.
int currentDevice();
// ncclMemAlloc/ncclMemFree: device memory when a GPU is present, else host memory.
void* memAlloc(size_t bytes);
void memFree(void* ptr);
// Host memory for ncclMemAlloc: Conflux's shareable memory (cfxMemAlloc with no communicator), so
// that ncclCommRegister can register it and collectives on it run zero-copy (comm_api.cc).
void* hostMemAlloc(size_t bytes);
void hostMemFree(void* ptr);

}  // namespace cfx_nccl
