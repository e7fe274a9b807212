#include "shim.h"

#include "common/never_freed.h"

namespace cfx_nccl {

namespace {
// ncclGetLastError(NULL): the calling thread's last error, as NCCL keeps it.
thread_local std::string tlsLastError;
}  // namespace

ncclResult_t toNccl(cfxResult_t r) {
  switch (r) {
    case cfxSuccess: return ncclSuccess;
    case cfxUnhandledCudaError: return ncclUnhandledCudaError;
    case cfxSystemError: return ncclSystemError;
    case cfxInternalError: return ncclInternalError;
    case cfxInvalidArgument: return ncclInvalidArgument;
    case cfxInvalidUsage: return ncclInvalidUsage;
    case cfxRemoteError: return ncclRemoteError;
    case cfxInProgress: return ncclInProgress;
    // NCCL 2.27 has no timeout code: a stalled peer is a remote error there too. The message
    // (ncclGetLastError) says which.
    case cfxTimeout: return ncclRemoteError;
    case cfxAborted: return ncclInvalidUsage;
    default: return ncclInternalError;
  }
}

void check(cfxResult_t r, cfxComm_t inner) {
  if (r != cfxSuccess) throw ShimError(toNccl(r), cfxGetLastError(inner));
}

ncclComm* live(ncclComm_t comm) {
  if (comm == nullptr) throw ShimError(ncclInvalidArgument, "comm is NULL");
  if (comm->state.load(std::memory_order_acquire) != ncclComm::kAlive) {
    throw ShimError(ncclInvalidArgument, "comm was destroyed or aborted, or is not a communicator");
  }
  return comm;
}

ncclComm_t wrap(cfxComm_t inner, int cudaDev) {
  auto* c = new ncclComm;
  conflux::neverFreed(c);  // see shim.h
  c->inner = inner;
  c->cudaDev = cudaDev;
  return c;
}

ncclResult_t fail(const char* fn, ncclComm_t comm, ncclResult_t code, const std::string& what) {
  std::string msg = std::string(fn) + ": " + what;
  tlsLastError = msg;
  if (comm != nullptr && comm->state.load(std::memory_order_acquire) == ncclComm::kAlive) {
    std::lock_guard<std::mutex> lock(comm->errorMu);
    comm->lastError = std::move(msg);
  }
  return code;
}

const char* lastError(ncclComm_t comm) {
  if (comm == nullptr || comm->state.load(std::memory_order_acquire) != ncclComm::kAlive) {
    return tlsLastError.c_str();
  }
  std::lock_guard<std::mutex> lock(comm->errorMu);
  return comm->lastError.c_str();
}

}  // namespace cfx_nccl
