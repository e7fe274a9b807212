// The exact reductions through the public API, shared by the one-host suite (exact_test.cc) and
// the many-host suite (multihost_test.cc): every floating-point datatype, cfxSumExact and
// cfxAvgExact, AllReduce, Reduce, ReduceScatter and ReduceScatterv, counts 0, 1, odd and large, in
// and out of place, each element checked against the independent reference (exact_reference.h;
// outputs above 64 elements are checked on a sample that meets every input pattern and both ends).
// Inputs depend on the rank count and the element only, never on the layout, so every layout of n
// ranks must give the same bits.
#pragma once

#include <string>

#include "harness.h"

namespace cfxtest {

// Every case above on `rk`'s communicator with `sumOp` and `avgOp` (cfxSumExact and cfxAvgExact,
// or cfxSum and cfxAvg on a communicator made exact); "" or the first failure.
std::string exactMatrix(Rank& rk, cfxRedOp_t sumOp = cfxSumExact, cfxRedOp_t avgOp = cfxAvgExact);
// A shorter matrix for the forced-algorithm runs: float and bf16, a few sizes, AllReduce only.
std::string exactAllReduceCases(Rank& rk, cfxRedOp_t sumOp = cfxSumExact, cfxRedOp_t avgOp = cfxAvgExact);

}  // namespace cfxtest
