#include "common/error.h"

#include <cstring>

namespace conflux {

const char* statusName(Status s) {
  switch (s) {
    case Status::kSuccess: return "success";
    case Status::kUnhandledCudaError: return "unhandled cuda error";
    case Status::kSystemError: return "system error";
    case Status::kInternalError: return "internal error";
    case Status::kInvalidArgument: return "invalid argument";
    case Status::kInvalidUsage: return "invalid usage";
    case Status::kRemoteError: return "remote error";
    case Status::kInProgress: return "in progress";
    case Status::kTimeout: return "timeout";
    case Status::kAborted: return "aborted";
  }
  return "unknown status";
}

void throwSystemError(const std::string& what, int errnum) {
  char buf[256];
  const char* msg = strerror_r(errnum, buf, sizeof(buf));
  throw Error(Status::kSystemError, what + ": " + msg);
}

}  // namespace conflux
