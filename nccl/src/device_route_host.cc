// The shim without CUDA: every buffer is host memory, so nothing is routed to a staged path.
#include <new>

#include "device_route.h"
#include "shim.h"

namespace cfx_nccl {

bool runOnDevice(ncclComm&, const DeviceCall&) { return false; }
HostView::HostView(ncclComm&, const void* send, size_t, void* recv, size_t, void* stream)
    : send_(send), recv_(recv), stream_(stream) {}
void HostView::done() {}
ncclResult_t deviceAsyncError(ncclComm&) { return ncclSuccess; }
void retireDevice(ncclComm&) {}
void drainDevice(ncclComm&) {}
int currentDevice() { return 0; }
void* memAlloc(size_t bytes) { return hostMemAlloc(bytes); }
void memFree(void* ptr) { hostMemFree(ptr); }

}  // namespace cfx_nccl
