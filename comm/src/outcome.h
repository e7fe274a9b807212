// The result of running a batch of operations: a status and, on failure, a message.
#pragma once

#include <cstdint>
#include <string>

#include "common/error.h"

namespace conflux {

struct Outcome {
  Status status = Status::kSuccess;
  std::string message;
  // The communicator's call number (Op::callSeq) of the collective call across hosts that failed;
  // 0: none or unknown. Peers on other hosts still finish earlier calls (net::Transport::shutdown).
  uint32_t failedCall = 0;
  bool ok() const { return status == Status::kSuccess; }
  void raise() const {
    if (!ok()) throw Error(status, message);
  }
};

// The exception being handled, as an Outcome: an Error keeps its status and message, running out
// of memory is kSystemError, anything else kInternalError. Call it only inside a catch block. It
// is the one place where exceptions become statuses: the API guard (api/handle.h), the engine and
// the set-up steps (comm_setup.h) all catch everything and ask it.
Outcome currentException();

}  // namespace conflux
