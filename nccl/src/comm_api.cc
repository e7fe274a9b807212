// NCCL's communicator calls over Conflux's: version, unique id, init (by rank, with a config, all
// ranks in one process, scalable), split, finalize, destroy, abort, queries and errors.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_route.h"
#include "group.h"
#include "shim.h"

using namespace cfx_nccl;

#define NCCL_API extern "C" __attribute__((visibility("default")))

namespace {

cfxUniqueId toCfx(const ncclUniqueId& id) {
  static_assert(sizeof(cfxUniqueId) == sizeof(ncclUniqueId));
  cfxUniqueId out;
  std::memcpy(&out, &id, sizeof(out));
  return out;
}

// NCCL's config, read as far as the caller's version has it; what Conflux has no use for (CTAs,
// network names, NVLS) is ignored. Non-blocking communicators behave as blocking ones, which NCCL's
// contract allows (every call then returns its final result).
cfxConfig_t toCfx(const void* config) {
  cfxConfig_t out = CFX_CONFIG_INITIALIZER;
  if (config == nullptr) return out;
  ncclConfigPrefix p;
  std::memcpy(&p, config, sizeof(p));
  if (p.magic != NCCL_API_MAGIC || p.size < sizeof(ncclConfigPrefix)) {
    throw ShimError(ncclInvalidArgument, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  }
  return out;
}

void checkRanks(int nranks, int rank) {
  if (nranks < 1) throw ShimError(ncclInvalidArgument, "nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks) {
    throw ShimError(ncclInvalidArgument, "rank " + std::to_string(rank) + " is not in [0, " + std::to_string(nranks) + ")");
  }
}

void initRank(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank, const void* config) {
  if (comm == nullptr) throw ShimError(ncclInvalidArgument, "comm is NULL");
  checkRanks(nranks, rank);
  PendingInit p{comm, nranks, toCfx(id), rank, toCfx(config), currentDevice()};
  if (inGroup()) {
    deferInit(p);
    return;
  }
  cfxComm_t inner = nullptr;
  check(cfxCommInitRankConfig(&inner, nranks, p.id, rank, &p.config), nullptr);
  *comm = wrap(inner, p.cudaDev);
}

// Releases the Conflux communicator and marks the handle dead (never freed, see shim.h). Destroy
// lets the staged path finish first; abort fails the communicator first, which releases the
// streams waiting on the staged path, then frees that.
void retire(ncclComm* c, bool abort) {
  uint32_t alive = ncclComm::kAlive;
  if (!c->state.compare_exchange_strong(alive, ncclComm::kDead)) {
    throw ShimError(ncclInvalidArgument, "comm was already destroyed or aborted");
  }
  if (abort) {
    check(cfxCommAbort(c->inner), nullptr);
    retireDevice(*c);
  } else {
    retireDevice(*c);
    check(cfxCommDestroy(c->inner), nullptr);
  }
}

}  // namespace

NCCL_API ncclResult_t ncclGetVersion(int* version) {
  return guarded("ncclGetVersion", nullptr, [&] {
    if (version == nullptr) throw ShimError(ncclInvalidArgument, "version is NULL");
    *version = CFX_NCCL_VERSION_CODE;
  });
}

NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  return guarded("ncclGetUniqueId", nullptr, [&] {
    if (uniqueId == nullptr) throw ShimError(ncclInvalidArgument, "uniqueId is NULL");
    cfxUniqueId id;
    check(cfxGetUniqueId(&id), nullptr);
    std::memcpy(uniqueId, &id, sizeof(id));
  });
}

NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return guarded("ncclCommInitRank", nullptr, [&] { initRank(comm, nranks, commId, rank, nullptr); });
}

NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                             void* config) {
  return guarded("ncclCommInitRankConfig", nullptr, [&] { initRank(comm, nranks, commId, rank, config); });
}

// Several unique ids spread the bootstrap in NCCL; every rank passes the same list, so the first
// one serves as Conflux's single rendezvous.
NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId,
                                               ncclUniqueId* commIds, void* config) {
  return guarded("ncclCommInitRankScalable", nullptr, [&] {
    if (nId < 1 || commIds == nullptr) throw ShimError(ncclInvalidArgument, "nId < 1 or commIds is NULL");
    initRank(comm, nranks, commIds[0], rank, config);
  });
}

// One process, `ndev` ranks: devlist is NULL or names the GPUs (ranks share the host either way).
NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  return guarded("ncclCommInitAll", nullptr, [&] {
    if (comms == nullptr) throw ShimError(ncclInvalidArgument, "comms is NULL");
    if (ndev < 1) throw ShimError(ncclInvalidArgument, "ndev " + std::to_string(ndev) + " < 1");
    cfxUniqueId id;
    check(cfxGetUniqueId(&id), nullptr);
    std::vector<PendingInit> inits;
    for (int i = 0; i < ndev; ++i) {
      inits.push_back({&comms[i], ndev, id, i, CFX_CONFIG_INITIALIZER, devlist ? devlist[i] : i});
    }
    initTogether(inits);
  });
}

NCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, void* config) {
  return guarded("ncclCommSplit", comm, [&] {
    ncclComm* c = live(comm);
    if (newcomm == nullptr) throw ShimError(ncclInvalidArgument, "newcomm is NULL");
    cfxConfig_t cfg = toCfx(config);
    cfxComm_t inner = nullptr;
    check(cfxCommSplit(c->inner, color, key, &inner, &cfg), c->inner);
    *newcomm = inner ? wrap(inner, c->cudaDev) : nullptr;
  });
}

// NCCL 2.27's shrink: the same flags as Conflux's (NCCL_SHRINK_DEFAULT lets pending work complete,
// NCCL_SHRINK_ABORT aborts it); the new communicator keeps the parent's device.
NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                                     void* config, int shrinkFlags) {
  return guarded("ncclCommShrink", comm, [&] {
    ncclComm* c = live(comm);
    if (newcomm == nullptr) throw ShimError(ncclInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
      throw ShimError(ncclInvalidArgument, "unknown shrinkFlags " + std::to_string(shrinkFlags));
    }
    if (shrinkFlags == NCCL_SHRINK_DEFAULT) drainDevice(*c);
    cfxConfig_t cfg = toCfx(config);
    cfxComm_t inner = nullptr;
    check(cfxCommShrink(c->inner, excludeRanksList, excludeRanksCount, &inner, &cfg,
                        shrinkFlags == NCCL_SHRINK_ABORT ? CFX_SHRINK_ABORT : CFX_SHRINK_DEFAULT),
          c->inner);
    *newcomm = wrap(inner, c->cudaDev);
  });
}

// Host-buffer calls are complete when they return; device-buffer calls run on the staged path's
// progress thread: finalize waits for their host part (the copies back are on their streams, as
// NCCL's kernels are after its blocking finalize) and reports its failure.
NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return guarded("ncclCommFinalize", comm, [&] { drainDevice(*live(comm)); });
}

// Suspension frees a communicator's dynamic GPU memory in NCCL. Conflux keeps none on the GPU (its
// staging is pinned host memory, which a suspended communicator keeps), so suspending only drains the
// staged work and refuses operations until ncclCommResume; unlike NCCL's it needs no barrier.
NCCL_API ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  return guarded("ncclCommSuspend", comm, [&] {
    ncclComm* c = live(comm);
    if ((flags & ~NCCL_SUSPEND_MEM) != 0) throw ShimError(ncclInvalidArgument, "unknown flags " + std::to_string(flags));
    drainDevice(*c);
    if (c->suspended.exchange(true)) throw ShimError(ncclInvalidUsage, "the communicator is already suspended");
  });
}

NCCL_API ncclResult_t ncclCommResume(ncclComm_t comm) {
  return guarded("ncclCommResume", comm, [&] {
    if (!live(comm)->suspended.exchange(false)) throw ShimError(ncclInvalidUsage, "the communicator is not suspended");
  });
}

// What NCCL's memory statistics say of Conflux: no GPU memory at all, suspended or not.
NCCL_API ncclResult_t ncclCommMemStats(ncclComm_t comm, int stat, uint64_t* value) {
  return guarded("ncclCommMemStats", comm, [&] {
    ncclComm* c = live(comm);
    if (value == nullptr) throw ShimError(ncclInvalidArgument, "value is NULL");
    switch (stat) {
      case ncclStatGpuMemSuspended: *value = c->suspended.load() ? 1 : 0; break;
      case ncclStatGpuMemSuspend:
      case ncclStatGpuMemPersist:
      case ncclStatGpuMemTotal: *value = 0; break;
      default: throw ShimError(ncclInvalidArgument, "unknown statistic " + std::to_string(stat));
    }
  });
}

NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return guarded("ncclCommDestroy", comm, [&] {
    if (comm == nullptr) return;  // as NCCL: destroying NULL is a no-op
    retire(live(comm), false);
  });
}

NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return guarded("ncclCommAbort", comm, [&] {
    if (comm == nullptr) return;
    retire(live(comm), true);
  });
}

NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return guarded("ncclCommCount", comm, [&] {
    if (count == nullptr) throw ShimError(ncclInvalidArgument, "count is NULL");
    check(cfxCommCount(live(comm)->inner, count), comm->inner);
  });
}

NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return guarded("ncclCommUserRank", comm, [&] {
    if (rank == nullptr) throw ShimError(ncclInvalidArgument, "rank is NULL");
    check(cfxCommUserRank(live(comm)->inner, rank), comm->inner);
  });
}

NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return guarded("ncclCommCuDevice", comm, [&] {
    if (device == nullptr) throw ShimError(ncclInvalidArgument, "device is NULL");
    *device = live(comm)->cudaDev;
  });
}

NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded("ncclCommGetAsyncError", comm, [&] {
    if (asyncError == nullptr) throw ShimError(ncclInvalidArgument, "asyncError is NULL");
    cfxResult_t r = cfxSuccess;
    check(cfxCommGetAsyncError(live(comm)->inner, &r), comm->inner);
    *asyncError = r != cfxSuccess ? toNccl(r) : deviceAsyncError(*comm);
  });
}

NCCL_API const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API const char* ncclGetLastError(ncclComm_t comm) { return lastError(comm); }

// Buffers: device memory where a GPU is present, else host memory (which the shim also moves).
NCCL_API ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  return guarded("ncclMemAlloc", nullptr, [&] {
    if (ptr == nullptr) throw ShimError(ncclInvalidArgument, "ptr is NULL");
    *ptr = memAlloc(size);
  });
}

NCCL_API ncclResult_t ncclMemFree(void* ptr) {
  return guarded("ncclMemFree", nullptr, [&] { memFree(ptr); });
}

namespace cfx_nccl {
// A registration as the shim hands it out: Conflux's handle, or none where the memory is not
// shareable (plain or device memory: registration is a hint in NCCL, and such buffers are staged).
struct Registration {
  void* inner = nullptr;
};

void* hostMemAlloc(size_t bytes) {
  void* p = nullptr;
  if (cfxMemAlloc(&p, bytes, nullptr) != cfxSuccess) {
    throw ShimError(ncclSystemError, std::string("cfxMemAlloc: ") + cfxGetLastError(nullptr));
  }
  return p;
}

void hostMemFree(void* ptr) {
  if (cfxMemFree(ptr, nullptr) != cfxSuccess) throw ShimError(ncclInvalidArgument, cfxGetLastError(nullptr));
}
}  // namespace cfx_nccl

// Memory from ncclMemAlloc (host builds, or no GPU) is Conflux's shareable memory: registered, its
// collectives run with no staging copy (cfxCommRegister). Other memory gets a handle that does nothing.
NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("ncclCommRegister", comm, [&] {
    live(comm);
    if (handle == nullptr) throw ShimError(ncclInvalidArgument, "handle is NULL");
    auto reg = std::make_unique<cfx_nccl::Registration>();
    if (cfxCommRegister(comm->inner, buff, size, &reg->inner) != cfxSuccess) reg->inner = nullptr;
    *handle = reg.release();
  });
}

NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return guarded("ncclCommDeregister", comm, [&] {
    live(comm);
    if (handle == nullptr) throw ShimError(ncclInvalidArgument, "handle is NULL");
    std::unique_ptr<cfx_nccl::Registration> reg(static_cast<cfx_nccl::Registration*>(handle));
    if (reg->inner != nullptr && cfxCommDeregister(comm->inner, reg->inner) != cfxSuccess) {
      throw ShimError(ncclInvalidArgument, cfxGetLastError(comm->inner));
    }
  });
}
