// The public handle behind cfxComm_t, and the one guard that turns exceptions into result codes.
//
// A handle is never freed: cfxCommDestroy and cfxCommAbort free the communicator inside it and
// mark the shell dead, so a later call with the stale handle gets cfxInvalidArgument instead of a
// use-after-free (a few dozen bytes per destroyed communicator).
#pragma once

#include <pthread.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"
#include "communicator.h"
#include "conflux/conflux.h"
#include "outcome.h"

struct cfxComm {
  static constexpr uint32_t kAlive = 0xc0f1c0f1u;
  static constexpr uint32_t kDead = 0xdeadc0f1u;

  std::atomic<uint32_t> state{kAlive};
  std::atomic<int> activeCalls{0};
  // The calls of the thread that created the handle (where a process makes its calls, as a rule)
  // are counted apart, by that thread alone, with plain stores and no locked instruction: the rare
  // side, retire(), pays the fence (common/membarrier.h). Set once, before the handle is returned.
  pthread_t owner{};
  bool ownerCounted = false;  // this process is registered for the asymmetric fence
  std::atomic<int> ownerCalls{0};
  std::unique_ptr<conflux::Communicator> impl;
  std::mutex errorMu;
  char lastError[1024] = {0};
};

namespace conflux::api {

cfxComm_t newHandle(std::unique_ptr<Communicator> impl);

// The failures of CommRef: a NULL handle, a dead one.
[[noreturn, gnu::cold]] void nullComm();
[[noreturn, gnu::cold]] void deadComm();

// Holds a communicator alive for the duration of one API call. Inline: every call makes one or
// two, and out of line they cost a call each (perf/RESULTS.md, 2026-12-04).
// A Dekker handshake with retire(): a call counts itself in, then reads `state`; retire() stores
// `state`, then reads the counts. Other threads count with locked instructions; the handle's
// owner with plain stores and a compiler barrier, retire() running the process-wide barrier
// between its store and its loads (1-rank 8 B Broadcast: two locked instructions fewer per call).
class CommRef {
 public:
  explicit CommRef(cfxComm_t comm) : comm_(comm) {
    if (comm == nullptr) [[unlikely]] nullComm();
    owner_ = comm->ownerCounted && pthread_equal(pthread_self(), comm->owner) != 0;
    if (owner_) {
      comm->ownerCalls.store(comm->ownerCalls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      comm->activeCalls.fetch_add(1, std::memory_order_seq_cst);
    }
    if (comm->state.load(std::memory_order_seq_cst) != cfxComm::kAlive) [[unlikely]] {
      leave();
      deadComm();
    }
  }
  ~CommRef() { leave(); }
  CommRef(const CommRef&) = delete;
  CommRef& operator=(const CommRef&) = delete;
  Communicator& operator*() const { return *comm_->impl; }
  Communicator* operator->() const { return comm_->impl.get(); }

 private:
  void leave() {
    if (owner_) {
      comm_->ownerCalls.store(comm_->ownerCalls.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    } else {
      comm_->activeCalls.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

  cfxComm_t comm_;
  bool owner_;
};

// Marks the handle dead and waits until no other call is inside it. Throws if already dead.
void retire(cfxComm_t comm);

cfxResult_t toResult(Status s);
const char* lastError(cfxComm_t comm);
cfxResult_t fail(const char* fn, cfxComm_t comm, Status status, const std::string& what);
// Stores `msg` as the communicator's last error (the caller holds it alive, e.g. by a CommRef).
void recordError(cfxComm_t comm, const std::string& msg);

// Runs `body`; every exception becomes a result code plus a message for cfxGetLastError.
template <class F>
cfxResult_t guarded(const char* fn, cfxComm_t comm, F&& body) noexcept {
  try {
    body();
    return cfxSuccess;
  } catch (...) {
    const Outcome why = currentException();
    return fail(fn, comm, why.status, why.message);
  }
}

}  // namespace conflux::api
