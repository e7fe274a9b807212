// One collective call checked exactly, and the datatype x op x count x placement matrix, shared
// by the one-host and the many-host suites.
#pragma once

#include <string>

#include "cases.h"
#include "harness.h"

namespace cfxtest {

inline constexpr size_t kSmallCounts[] = {0, 1, 7, 1031, 100003};

// Runs one case on this rank and checks the result exactly. Returns "" or a failure description.
std::string runCase(const Rank& rk, CollKind c, cfxDataType_t t, cfxRedOp_t op, size_t count, bool inPlace);
// Every datatype x op x kSmallCounts x in/out of place for one collective (stops at the first failure).
void runMatrix(const Rank& rk, CollKind c);

}  // namespace cfxtest
