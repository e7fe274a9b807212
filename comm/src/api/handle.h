// The public handle behind cfxComm_t, and the one guard that turns exceptions into result codes.
//
// A handle is never freed: cfxCommDestroy and cfxCommAbort free the communicator inside it and
// mark the shell dead, so a later call with the stale handle gets cfxInvalidArgument instead of a
// use-after-free (a few dozen bytes per destroyed communicator).
#pragma once

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
class CommRef {
 public:
  explicit CommRef(cfxComm_t comm) : comm_(comm) {
    if (comm == nullptr) [[unlikely]] nullComm();
    comm->activeCalls.fetch_add(1, std::memory_order_seq_cst);
    if (comm->state.load(std::memory_order_seq_cst) != cfxComm::kAlive) [[unlikely]] {
      comm->activeCalls.fetch_sub(1);
      deadComm();
    }
  }
  ~CommRef() { comm_->activeCalls.fetch_sub(1, std::memory_order_seq_cst); }
  CommRef(const CommRef&) = delete;
  CommRef& operator=(const CommRef&) = delete;
  Communicator& operator*() const { return *comm_->impl; }
  Communicator* operator->() const { return comm_->impl.get(); }

 private:
  cfxComm_t comm_;
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
