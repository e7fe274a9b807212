// The shim with CUDA: device buffers go to libconflux_cuda's staged path (one per communicator,
// made at its first device call, on the communicator's device), host buffers to the host path.
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
  const bool p2p = call.coll == DeviceColl::kSend || call.coll == DeviceColl::kRecv;
  const bool reduction = call.coll == DeviceColl::kAllReduce || call.coll == DeviceColl::kReduce ||
                         call.coll == DeviceColl::kReduceScatter;
  if ((p2p && inGroup()) || (reduction && (call.op < 0 || call.op >= ncclNumOps))) {
    if (cfxCudaComm_t s = existingStaged(c)) checkStaged(cfxCudaCommSynchronize(s), s);
    return false;  // the caller runs it on host copies (HostView)
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

void checkCuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw ShimError(ncclUnhandledCudaError, std::string(what) + ": " + cudaGetErrorString(e));
  }
}

HostView::HostView(ncclComm& c, const void* send, size_t sendBytes, void* recv, size_t recvBytes, void* stream)
    : send_(send), recv_(recv), stream_(stream) {
  const Space in = sendBytes > 0 ? spaceOf(send) : Space::kNone;
  const Space out = recvBytes > 0 ? spaceOf(recv) : Space::kNone;
  if (in != Space::kDevice && out != Space::kDevice) return;
  if (in == Space::kHost || out == Space::kHost) {
    throw ShimError(ncclInvalidArgument, "sendbuff and recvbuff must both be device memory or both host memory");
  }
  if (cfxCudaComm_t s = existingStaged(c)) checkStaged(cfxCudaCommSynchronize(s), s);
  checkCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
            "waiting for the stream before copying device buffers to the host");
  auto sendCopy = std::make_shared<std::vector<char>>(sendBytes);
  auto recvCopy = std::make_shared<std::vector<char>>(recvBytes);
  if (sendBytes > 0) {
    checkCuda(cudaMemcpy(sendCopy->data(), send, sendBytes, cudaMemcpyDeviceToHost), "copying sendbuff to the host");
  }
  send_ = sendCopy->data();
  recv_ = recvBytes > 0 ? recvCopy->data() : nullptr;
  device_ = recvBytes > 0 ? recv : nullptr;
  recvBytes_ = recvBytes;
  if (inGroup()) afterGroup([sendCopy, recvCopy] {});  // the group's calls read and write them at its end
  sendCopy_ = sendCopy;  // send_ points into it: it must live as long as this view
  copies_ = recvCopy;
}

void HostView::done() {
  if (device_ == nullptr) return;
  auto back = [device = device_, copy = copies_, bytes = recvBytes_, stream = static_cast<cudaStream_t>(stream_)] {
    checkCuda(cudaMemcpyAsync(device, copy->data(), bytes, cudaMemcpyHostToDevice, stream),
              "copying the result back to the device");
    checkCuda(cudaStreamSynchronize(stream), "copying the result back to the device");
  };
  if (inGroup()) {
    afterGroup(back);
  } else {
    back();
  }
}

ncclResult_t deviceAsyncError(ncclComm& c) {
  cfxCudaComm_t s = existingStaged(c);
  if (s == nullptr) return ncclSuccess;
  cfxResult_t r = cfxSuccess;
  checkStaged(cfxCudaCommGetAsyncError(s, &r), s);
  return toNccl(r);
}

void drainDevice(ncclComm& c) {
  if (cfxCudaComm_t s = existingStaged(c)) checkStaged(cfxCudaCommSynchronize(s), s);
  if (deviceAsyncError(c) != ncclSuccess) {
    cfxCudaComm_t s = existingStaged(c);
    throw ShimError(deviceAsyncError(c), cfxCudaGetLastError(s));
  }
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
    return hostMemAlloc(bytes);
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
    hostMemFree(ptr);
  }
}

}  // namespace cfx_nccl
