// Entry points for registered buffers (comm/src/registry.h, ops/zero_copy.h).
#include <cstdint>

#include "api/handle.h"
#include "transport/shm/shareable.h"

using conflux::Error;
using conflux::Status;
using namespace conflux::api;

namespace {

uint64_t idOf(void* handle) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle)); }

}  // namespace

cfxResult_t cfxMemAlloc(void** ptr, size_t size, cfxComm_t comm) {
  return guarded("cfxMemAlloc", comm, [&] {
    if (ptr == nullptr) throw Error(Status::kInvalidArgument, "ptr is NULL");
    if (comm == nullptr) {
      *ptr = conflux::shm::allocShareable(size);
      return;
    }
    CommRef ref(comm);
    void* p = conflux::shm::allocShareable(size);
    try {
      ref->context().registered().add(p, size);
    } catch (...) {
      conflux::shm::freeShareable(p);
      throw;
    }
    *ptr = p;
  });
}

cfxResult_t cfxMemFree(void* ptr, cfxComm_t comm) {
  return guarded("cfxMemFree", comm, [&] {
    if (ptr == nullptr) return;
    if (!conflux::shm::findShareable(ptr, 0)) {
      throw Error(Status::kInvalidArgument, "ptr was not returned by cfxMemAlloc (or was freed already)");
    }
    if (comm != nullptr) {
      CommRef ref(comm);
      auto& ctx = ref->context();
      const uint64_t id = ctx.registered().find(ptr);
      while (id != 0 && ctx.registered().remove(id)) {
      }
    }
    conflux::shm::freeShareable(ptr);
  });
}

cfxResult_t cfxCommRegister(cfxComm_t comm, void* buff, size_t size, void** handle) {
  return guarded("cfxCommRegister", comm, [&] {
    CommRef ref(comm);
    if (buff == nullptr || handle == nullptr) throw Error(Status::kInvalidArgument, "buff or handle is NULL");
    *handle = reinterpret_cast<void*>(static_cast<uintptr_t>(ref->context().registered().add(buff, size)));
  });
}

cfxResult_t cfxCommDeregister(cfxComm_t comm, void* handle) {
  return guarded("cfxCommDeregister", comm, [&] {
    CommRef ref(comm);
    if (!ref->context().registered().remove(idOf(handle))) {
      throw Error(Status::kInvalidArgument, "handle is not a registration of this communicator");
    }
  });
}
