// Cases of the variable-count collectives, checked exactly on each rank, shared by the one-host
// suite (vector_coll_test.cc) and the many-host suite (multihost_test.cc). Each returns "" or what
// went wrong first on this rank.
#pragma once

#include <string>

#include "harness.h"

namespace cfxtest {

// Every datatype x uneven count sets (zeros included; one seed, so every rank draws the same).
std::string alltoallvMatrix(const Rank& rk);
// ... and in place and out of place.
std::string allgathervMatrix(const Rank& rk);
// ... and every op.
std::string reducescattervMatrix(const Rank& rk);
// On a stream, and inside a group with a ring of Send/Recv and another v-collective.
std::string streamAndGroupCases(const Rank& rk);
// Counts that disagree, and different v-collectives, each on a fresh communicator split from the
// job's: cfxInvalidUsage on every rank, naming the same two ranks, with no output written.
std::string mismatchCases(const Rank& rk);
// NULL count arrays, sendcount against recvcounts[rank], a bad op, overlapping buffers:
// cfxInvalidArgument, nothing written, and the communicator still works.
std::string invalidArgumentCases(const Rank& rk);

}  // namespace cfxtest
