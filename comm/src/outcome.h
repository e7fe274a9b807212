// The result of running a batch of operations: a status and, on failure, a message.
#pragma once

#include <string>

#include "common/error.h"

namespace conflux {

struct Outcome {
  Status status = Status::kSuccess;
  std::string message;
  bool ok() const { return status == Status::kSuccess; }
  void raise() const {
    if (!ok()) throw Error(status, message);
  }
};

}  // namespace conflux
