// The communicator behind ncclComm_t, and the one guard that turns Conflux's results and the
// shim's own errors into ncclResult_t plus a message for ncclGetLastError.
//
// As with cfxComm_t, a handle is never freed: ncclCommDestroy and ncclCommAbort release the Conflux
// communicator inside it and mark the shell dead, so a stale handle gets ncclInvalidArgument.
#pragma once

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "conflux/conflux.h"
#include "nccl_abi.h"
#include "premul.h"

struct ncclComm {
  static constexpr uint32_t kAlive = 0x6e63636cu;
  static constexpr uint32_t kDead = 0xdead6363u;

  std::atomic<uint32_t> state{kAlive};
  // Between ncclCommSuspend and ncclCommResume: operations are refused (NCCL's rule).
  std::atomic<bool> suspended{false};
  cfxComm_t inner = nullptr;
  int cudaDev = 0;
  cfx_nccl::PreMulTable premul;
  // The staged path for device buffers (a cfxCudaComm_t), made at the first device call.
  std::mutex stagedMu;
  struct cfxCudaComm* staged = nullptr;
  std::mutex errorMu;
  std::string lastError;
};

namespace cfx_nccl {

// An error the shim itself finds (or a Conflux result it passes on), with NCCL's code.
class ShimError : public std::runtime_error {
 public:
  ShimError(ncclResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ncclResult_t code() const { return code_; }

 private:
  ncclResult_t code_;
};

ncclResult_t toNccl(cfxResult_t r);
// Throws ShimError carrying Conflux's message when `r` is not cfxSuccess.
void check(cfxResult_t r, cfxComm_t inner);
// The live communicator behind `comm`; throws ncclInvalidArgument for NULL or a destroyed one.
ncclComm* live(ncclComm_t comm);
ncclComm_t wrap(cfxComm_t inner, int cudaDev);

ncclResult_t fail(const char* fn, ncclComm_t comm, ncclResult_t code, const std::string& what);
const char* lastError(ncclComm_t comm);

template <class F>
ncclResult_t guarded(const char* fn, ncclComm_t comm, F&& body) noexcept {
  try {
    body();
    return ncclSuccess;
  } catch (const ShimError& e) {
    return fail(fn, comm, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(fn, comm, ncclSystemError, "out of memory");
  } catch (const std::exception& e) {
    return fail(fn, comm, ncclInternalError, e.what());
  } catch (...) {
    return fail(fn, comm, ncclInternalError, "unknown exception");
  }
}

}  // namespace cfx_nccl
