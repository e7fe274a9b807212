// The shim with CUDA: device buffers go to libconflux_cuda's staged path (one per communicator,
// made at its first device call, on the communicator's device), host buffers to the host path.
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "conflux/conflux_cuda.h"
#include "device_route.h"
#include "group.h"
#include "shim.h"

namespace cfx_nccl {

namespace {

enum class Space { kNone, kHost, kDevice };

// Where `p` lives. Without a usable GPU (no driver, no device) every pointer is host memory.
Space spaceOf(const void* p) {
  if (p == nullptr) return Space::kNone;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();  // clear it: the caller's next CUDA call must not see it
    return Space::kHost;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ? Space::kDevice : Space::kHost;
}

cfxCudaComm_t stagedOf(ncclComm& c) {
  std::lock_guard<std::mutex> lock(c.stagedMu);
  if (c.staged == nullptr) {
    cfxCudaComm_t s = nullptr;
    if (cfxCudaCommCreate(c.inner, c.cudaDev, &s) != cfxSuccess) {
      throw ShimError(ncclUnhandledCudaError, std::string("cannot start the staged path: ") + cfxCudaGetLastError(nullptr));
    }
    c.staged = s;
  }
  return c.staged;
}

cfxCudaComm_t existingStaged(ncclComm& c) {
  std::lock_guard<std::mutex> lock(c.stagedMu);
  return c.staged;
}

void checkStaged(cfxResult_t r, cfxCudaComm_t s) {
  if (r != cfxSuccess) throw ShimError(toNccl(r), cfxCudaGetLastError(s));
}

cfxRedOp_t builtinOp(ncclRedOp_t op) {
  if (op < 0 || op >= ncclNumOps) {
    throw ShimError(ncclInvalidUsage, "PreMulSum ops are not supported on device buffers by Conflux's staged path");
  }
  return static_cast<cfxRedOp_t>(op);
}

}  // namespace

bool runOnDevice(ncclComm& c, const DeviceCall& call) {
  const Space in = spaceOf(call.send), out = spaceOf(call.recv);
  if (in != Space::kDevice && out != Space::kDevice) {
    if (cfxCudaComm_t s = existingStaged(c)) checkStaged(cfxCudaCommSynchronize(s), s);
    return false;
  }
  if (in == Space::kHost || out == Space::kHost) {
    throw ShimError(ncclInvalidArgument, "sendbuff and recvbuff must both be device memory or both host memory");
  }
  if ((call.coll == DeviceColl::kSend || call.coll == DeviceColl::kRecv) && inGroup()) {
    throw ShimError(ncclInvalidUsage,
                    "grouped send/recv on device buffers is not supported by Conflux's staged path yet; "
                    "use host buffers or ungrouped calls");
  }
  cfxCudaComm_t s = stagedOf(c);
  const auto t = static_cast<cfxDataType_t>(call.type);
  void* st = static_cast<void*>(call.stream);
  switch (call.coll) {
    case DeviceColl::kAllReduce:
      checkStaged(cfxCudaAllReduce(call.send, call.recv, call.count, t, builtinOp(call.op), s, st), s);
      break;
    case DeviceColl::kReduce:
      checkStaged(cfxCudaReduce(call.send, call.recv, call.count, t, builtinOp(call.op), call.root, s, st), s);
      break;
    case DeviceColl::kBroadcast:
      checkStaged(cfxCudaBroadcast(call.send, call.recv, call.count, t, call.root, s, st), s);
      break;
    case DeviceColl::kAllGather: checkStaged(cfxCudaAllGather(call.send, call.recv, call.count, t, s, st), s); break;
    case DeviceColl::kReduceScatter:
      checkStaged(cfxCudaReduceScatter(call.send, call.recv, call.count, t, builtinOp(call.op), s, st), s);
      break;
    case DeviceColl::kAlltoAll: checkStaged(cfxCudaAlltoAll(call.send, call.recv, call.count, t, s, st), s); break;
    case DeviceColl::kSend: checkStaged(cfxCudaSend(call.send, call.count, t, call.root, s, st), s); break;
    case DeviceColl::kRecv: checkStaged(cfxCudaRecv(call.recv, call.count, t, call.root, s, st), s); break;
  }
  return true;
}

void requireHost(const void* a, const void* b, const char* what) {
  if (spaceOf(a) == Space::kDevice || spaceOf(b) == Space::kDevice) {
    throw ShimError(ncclInvalidUsage, std::string(what) + " on device buffers is not supported by Conflux's staged path");
  }
}

ncclResult_t deviceAsyncError(ncclComm& c) {
  cfxCudaComm_t s = existingStaged(c);
  if (s == nullptr) return ncclSuccess;
  cfxResult_t r = cfxSuccess;
  checkStaged(cfxCudaCommGetAsyncError(s, &r), s);
  return toNccl(r);
}

void retireDevice(ncclComm& c) {
  cfxCudaComm_t s = existingStaged(c);
  if (s != nullptr) checkStaged(cfxCudaCommDestroy(s), s);
}

int currentDevice() {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return d;
}

void* memAlloc(size_t bytes) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return ::operator new(bytes == 0 ? 1 : bytes);
  }
  void* p = nullptr;
  if (cudaMalloc(&p, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    throw ShimError(ncclUnhandledCudaError, std::string("cudaMalloc failed: ") + cudaGetErrorString(e));
  }
  return p;
}

void memFree(void* ptr) {
  if (ptr == nullptr) return;
  if (spaceOf(ptr) == Space::kDevice) {
    cudaFree(ptr);
  } else {
    ::operator delete(ptr);
  }
}

}  // namespace cfx_nccl
