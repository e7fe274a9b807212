// Device buffers in the shim. In a build with CUDA (libconflux_cuda), a call whose buffers are CUDA
// device memory goes through Conflux's staged path on the caller's stream, with NCCL's stream
// semantics (the call returns at once; the stream sees the result). Host buffers keep the blocking
// host path. Without CUDA (device_route_host.cc) every buffer is host memory.
#pragma once

#include <cstddef>

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

// Submits `call` to the staged path and returns true when its buffers are device memory; returns
// false for host buffers after waiting for the staged work already queued on `c` (so the host path
// never runs beside it). Throws ShimError for mixed buffers or what the staged path refuses.
bool runOnDevice(ncclComm& c, const DeviceCall& call);
// Throws ncclInvalidUsage when `a` or `b` is device memory (for calls the staged path lacks).
void requireHost(const void* a, const void* b, const char* what);
// The staged path's first failure, or ncclSuccess.
ncclResult_t deviceAsyncError(ncclComm& c);
// Before the communicator goes: waits for (or, when aborting, fails) the staged work and frees it.
void retireDevice(ncclComm& c);
// The CUDA device current on this thread (0 without CUDA), which a new communicator belongs to.
int currentDevice();
// ncclMemAlloc/ncclMemFree: device memory when a GPU is present, else host memory.
void* memAlloc(size_t bytes);
void memFree(void* ptr);

}  // namespace cfx_nccl
