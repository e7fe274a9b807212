// Typed errors used inside Conflux. Every layer throws conflux::Error; the C API converts it to a
// cfxResult_t at one guard (comm/src/api/handle.h). Status mirrors the C result codes without
// depending on the public header, so transport and topology stay independent of comm.
#pragma once

#include <stdexcept>
#include <string>

namespace conflux {

enum class Status {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
  kAborted = 9,
};

const char* statusName(Status s);

class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& what) : std::runtime_error(what), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

// Throws Error(kSystemError) with `what` and strerror(errnum).
[[noreturn]] void throwSystemError(const std::string& what, int errnum);

}  // namespace conflux
