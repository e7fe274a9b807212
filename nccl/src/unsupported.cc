// NCCL calls the shim exports but cannot serve, each with why. Each returns ncclInvalidUsage with a
// message for ncclGetLastError, so a program (or PyTorch's libtorch_cuda.so, which imports them)
// loads and learns at run time what is missing.
//   - Symmetric-memory windows, the device communicator and its pointers (ncclCommWindow*,
//     ncclWinGetUserPtr, ncclDevComm*, ncclGetLsaMultimemDevicePointer, ncclGetPeerDevicePointer) and
//     one-sided signals (ncclPutSignal, ncclSignal, ncclWaitSignal): they hand the program device
//     memory that NCCL's own GPU kernels read and write; Conflux runs no kernel on the GPU.
//   - Growing a communicator (ncclCommGetUniqueId, ncclCommGrow): Conflux has no way to add ranks
//     to a live communicator.
//   - Revoking (ncclCommRevoke): Conflux's shrink (ncclCommShrink, in comm_api.cc) aborts the
//     parent's work itself (NCCL_SHRINK_ABORT); a revoke without a shrink is not offered.
//   - Group simulation (ncclGroupSimulateEnd): its estimate comes from NCCL's tuning model of NCCL's
//     own algorithms, which says nothing of Conflux's.
#include <cstdint>

#include "shim.h"

using namespace cfx_nccl;

#define NCCL_API extern "C" __attribute__((visibility("default")))

namespace {

ncclResult_t unsupported(const char* fn, ncclComm_t comm) {
  return fail(fn, comm, ncclInvalidUsage, "not supported by Conflux's NCCL shim (it implements NCCL " +
                                              std::to_string(CFX_NCCL_MAJOR) + "." + std::to_string(CFX_NCCL_MINOR) +
                                              "'s host API over host-staged collectives)");
}

}  // namespace

NCCL_API ncclResult_t ncclCommGrow(ncclComm_t comm, int, const ncclUniqueId*, int, ncclComm_t*, void*) {
  return unsupported("ncclCommGrow", comm);
}
NCCL_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int) { return unsupported("ncclCommRevoke", comm); }
NCCL_API ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId*) {
  return unsupported("ncclCommGetUniqueId", comm);
}
NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void*, size_t, ncclWindow_t*, int) {
  return unsupported("ncclCommWindowRegister", comm);
}
NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t) {
  return unsupported("ncclCommWindowDeregister", comm);
}
NCCL_API ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t, void**) {
  return unsupported("ncclWinGetUserPtr", comm);
}
NCCL_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void*, void*) {
  return unsupported("ncclDevCommCreate", comm);
}
NCCL_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void*) { return unsupported("ncclDevCommDestroy", comm); }
NCCL_API ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t, size_t, void**) {
  return unsupported("ncclGetLsaMultimemDevicePointer", nullptr);
}
NCCL_API ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void**) {
  return unsupported("ncclGetPeerDevicePointer", nullptr);
}
NCCL_API ncclResult_t ncclPutSignal(const void*, size_t, ncclDataType_t, int, ncclWindow_t, size_t, int, int,
                                    unsigned int, ncclComm_t comm, cudaStream_t) {
  return unsupported("ncclPutSignal", comm);
}
NCCL_API ncclResult_t ncclSignal(int, int, int, unsigned int, ncclComm_t comm, cudaStream_t) {
  return unsupported("ncclSignal", comm);
}
NCCL_API ncclResult_t ncclWaitSignal(int, void*, ncclComm_t comm, cudaStream_t) { return unsupported("ncclWaitSignal", comm); }
NCCL_API ncclResult_t ncclGroupSimulateEnd(void*) { return unsupported("ncclGroupSimulateEnd", nullptr); }
