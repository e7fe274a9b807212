// cfxCommShrink cases, shared by the one-host suite (shrink_test.cc) and the many-host suite
// (multihost_test.cc). Each runs inside every rank and returns "" or what went wrong first there.
#pragma once

#include <string>

#include "cases.h"
#include "harness.h"

namespace cfxtest {

// Rank `victim` issues collective `c` (large, on a stream) and is SIGKILLed while it runs; every
// survivor's own call of `c` fails; cfxCommGetFailedRanks names the victim alone; the survivors
// shrink with CFX_SHRINK_ABORT and the new communicator (ranked in order, without the victim)
// passes exact cases of `c` and of AllReduce; both are then closed (rk.comm: aborted, set to NULL).
// `shrinkSeconds` (survivors): from the failed call's
// return to the shrink's.
std::string killAndShrink(Rank& rk, int victim, CollKind c, double* shrinkSeconds = nullptr);
// The new communicator of a shrink: its size and rank, and exact results of `c` and AllReduce.
std::string checkShrunk(cfxComm_t shrunk, int expectSize, int expectRank, CollKind c);

}  // namespace cfxtest
