#include "api/handle.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/log.h"
#include "common/membarrier.h"
#include "common/never_freed.h"

namespace conflux::api {

namespace {
// Errors of calls without a (live) communicator: per thread, like errno.
thread_local char tlsLastError[1024];

void store(char* dst, size_t n, const std::string& msg) { std::snprintf(dst, n, "%s", msg.c_str()); }
}  // namespace

cfxComm_t newHandle(std::unique_ptr<Communicator> impl) {
  auto* h = new cfxComm();
  h->impl = std::move(impl);
  h->owner = pthread_self();
  h->ownerCounted = membarrier::registerProcess();
  // A failure met off the calling thread (stream work) is this communicator's last error too.
  h->impl->setFailureSink([h](const std::string& msg) { recordError(h, msg); });
  neverFreed(h);  // see handle.h
  return h;
}

void nullComm() { throw Error(Status::kInvalidArgument, "comm is NULL"); }

void deadComm() { throw Error(Status::kInvalidArgument, "comm was destroyed or aborted, or is not a communicator"); }

void retire(cfxComm_t comm) {
  if (comm == nullptr) throw Error(Status::kInvalidArgument, "comm is NULL");
  uint32_t alive = cfxComm::kAlive;
  if (!comm->state.compare_exchange_strong(alive, cfxComm::kDead)) {
    throw Error(Status::kInvalidArgument, "comm was already destroyed or aborted, or is not a communicator");
  }
  // The owner's count needs the barrier on every running thread (CommRef); where the kernel
  // refuses it, a count read as zero is read again after a millisecond, by when any store of the
  // owner's issued before has left its store buffer.
  bool settled = !comm->ownerCounted || membarrier::processBarrier();
  for (;;) {
    if (comm->activeCalls.load(std::memory_order_seq_cst) == 0 && comm->ownerCalls.load(std::memory_order_acquire) == 0) {
      if (settled) return;
      settled = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

cfxResult_t toResult(Status s) { return static_cast<cfxResult_t>(static_cast<int>(s)); }

const char* lastError(cfxComm_t comm) {
  if (comm == nullptr) return tlsLastError;
  return comm->lastError;
}

void recordError(cfxComm_t comm, const std::string& msg) {
  std::lock_guard<std::mutex> lock(comm->errorMu);
  store(comm->lastError, sizeof(comm->lastError), msg);
}

cfxResult_t fail(const char* fn, cfxComm_t comm, Status status, const std::string& what) {
  std::string msg = std::string(fn) + ": " + what;
  store(tlsLastError, sizeof(tlsLastError), msg);
  if (comm != nullptr) recordError(comm, msg);
  logWarn(msg + " [" + statusName(status) + "]");
  return toResult(status);
}

}  // namespace conflux::api
