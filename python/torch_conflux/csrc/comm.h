// One Conflux communicator for one process group, created through the c10d store torch hands the
// backend: every init_method torch supports (env://, tcp://, file://) therefore works.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace torch_conflux {

class Communicator {
 public:
  // Rendezvous: the k-th communicator created over `store` (counted by a store counter every rank
  // adds to, so re-creating a group over the same store never reads a stale id) takes the unique id
  // rank 0 publishes under "conflux/uid/<k>". `timeout` becomes the communicator's per-wait
  // timeout (cfxConfig_t.timeoutMs). Throws c10::DistBackendError naming this rank on failure.
  Communicator(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::chrono::milliseconds timeout);
  // Takes over `comm` (a communicator cfxCommShrink made).
  Communicator(cfxComm_t comm, int rank, int size);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  cfxComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Throws c10::DistBackendError "conflux <op> failed on rank R of N: <result>: <Conflux's message>"
  // unless r is cfxSuccess.
  void check(cfxResult_t r, const char* op) const;
  // Whether this communicator's waits spin before they yield their CPU (cfxCommGetSpin): the
  // backend's worker and Work::wait() poll before they sleep only then.
  bool spins() const;

  // cfxCommShrink without `exclude` (group ranks); `abortFirst`: CFX_SHRINK_ABORT. Throws
  // c10::DistBackendError on failure.
  std::shared_ptr<Communicator> shrink(const std::vector<int>& exclude, bool abortFirst) const;
  // cfxCommGetFailedRanks: the ranks whose processes are gone.
  std::vector<int> failedRanks() const;

  // From any thread: operations in progress fail with cfxAborted, later ones at once.
  void abort() noexcept;
  // Normal close: waits for nothing but this rank's own queued work (none: the backend's worker has
  // drained). Idempotent; never throws.
  void destroy() noexcept;

 private:
  cfxComm_t comm_ = nullptr;
  int rank_;
  int size_;
  std::atomic<bool> closed_{false};
};

}  // namespace torch_conflux
