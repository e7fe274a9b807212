#include "comm.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

namespace torch_conflux {
namespace {

std::string describe(cfxResult_t r, cfxComm_t comm) {
  std::string text = cfxGetErrorString(r);
  const char* detail = cfxGetLastError(comm);
  if (detail != nullptr && *detail != '\0') text += std::string(": ") + detail;
  return text;
}

cfxUniqueId rendezvous(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
  // Every rank joins each generation once, so join numbers of generation k are k*size .. k*size+size-1.
  const int64_t join = store->add("conflux/joins", 1) - 1;
  const std::string key = "conflux/uid/" + std::to_string(join / size);
  cfxUniqueId id;
  if (rank == 0) {
    cfxResult_t r = cfxGetUniqueId(&id);
    if (r != cfxSuccess) {
      C10_THROW_ERROR(DistBackendError, "conflux: rank 0 could not create the unique id: " + describe(r, nullptr));
    }
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
    return id;
  }
  std::vector<uint8_t> bytes = store->get(key);
  if (bytes.size() != sizeof(id.internal)) {
    C10_THROW_ERROR(DistBackendError, "conflux: rank " + std::to_string(rank) + " read a unique id of " +
                                          std::to_string(bytes.size()) + " bytes from the store under '" + key +
                                          "', expected " + std::to_string(sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  return id;
}

}  // namespace

Communicator::Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                           std::chrono::milliseconds timeout)
    : rank_(rank), size_(size) {
  cfxUniqueId id = rendezvous(store, rank, size);
  cfxConfig_t config = CFX_CONFIG_INITIALIZER;
  config.timeoutMs = static_cast<int>(std::clamp<int64_t>(timeout.count(), 1, INT_MAX));
  cfxResult_t r = cfxCommInitRankConfig(&comm_, size, id, rank, &config);
  if (r != cfxSuccess) {
    C10_THROW_ERROR(DistBackendError, "conflux: creating the communicator failed on rank " + std::to_string(rank) +
                                          " of " + std::to_string(size) + ": " + describe(r, nullptr));
  }
}

Communicator::Communicator(cfxComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}

Communicator::~Communicator() { destroy(); }

std::shared_ptr<Communicator> Communicator::shrink(const std::vector<int>& exclude, bool abortFirst) const {
  cfxComm_t shrunk = nullptr;
  check(cfxCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &shrunk, nullptr,
                      abortFirst ? CFX_SHRINK_ABORT : CFX_SHRINK_DEFAULT),
        "shrink");
  int rank = -1, size = -1;
  cfxCommUserRank(shrunk, &rank);
  cfxCommCount(shrunk, &size);
  return std::make_shared<Communicator>(shrunk, rank, size);
}

std::vector<int> Communicator::failedRanks() const {
  std::vector<int> failed(static_cast<size_t>(size_));
  int count = 0;
  check(cfxCommGetFailedRanks(comm_, failed.data(), size_, &count), "failed_ranks");
  failed.resize(static_cast<size_t>(count));
  return failed;
}

bool Communicator::spins() const {
  int polls = 0;
  check(cfxCommGetSpin(comm_, &polls), "get_spin");
  return polls > 0;
}

void Communicator::check(cfxResult_t r, const char* op) const {
  if (r == cfxSuccess) return;
  C10_THROW_ERROR(DistBackendError, std::string("conflux ") + op + " failed on rank " + std::to_string(rank_) +
                                        " of " + std::to_string(size_) + ": " + describe(r, comm_));
}

void Communicator::abort() noexcept {
  if (closed_.exchange(true)) return;
  cfxCommAbort(comm_);
}

void Communicator::destroy() noexcept {
  if (closed_.exchange(true)) return;
  cfxResult_t async = cfxSuccess;
  // A failed communicator has nothing to say goodbye to: abort it (returns at once).
  if (cfxCommGetAsyncError(comm_, &async) != cfxSuccess || async != cfxSuccess) {
    cfxCommAbort(comm_);
  } else {
    cfxCommDestroy(comm_);
  }
}

}  // namespace torch_conflux
