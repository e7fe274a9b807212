// The measurement loop shared by every perf binary and backend.
#pragma once

#include "backend.h"

namespace cfxperf {

// Runs collective `c` as nccl-tests would and prints nccl-tests' output on rank 0. Returns the
// process exit code: non-zero if a checked value was wrong or an operation failed.
int runPerf(Coll c, int argc, char** argv);

}  // namespace cfxperf
