// AllReduce and Reduce over cross-memory attach (ops/single_copy.cc, issue #31 sections 3 and 4):
// bitwise the staged path's results (the same call on a communicator with CFX_CMA=0), in place and
// out of place, every datatype and op, counts 1, odd and several chunks, at 2, 3 and 5 ranks; ranks
// in place and out of place mix, on the path up to 16 MiB and on the staged path above it, with the
// same results; ranks whose settings put the same call on different paths fail with a mismatch. The
// exact values at every size are collectives_test's ForcedCma cases.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "random_data.h"

namespace cfxtest {
namespace {

// The single-copy reduction from the first byte; registered buffers out of the way.
RunOptions forced() {
  RunOptions o;
  o.env = {"CFX_CMA=1", "CFX_CMA_REDUCE_MIN_BYTES=1", "CFX_REGISTERED=0"};
  return o;
}

// A communicator over the same ranks on the staged path: the reference.
cfxComm_t stagedComm(Rank& rk) {
  setenv("CFX_CMA", "0", 1);
  cfxComm_t comm = nullptr;
  const cfxResult_t r = cfxCommSplit(rk.comm, 0, rk.rank, &comm, nullptr);
  setenv("CFX_CMA", "1", 1);
  EXPECT_EQ(r, cfxSuccess) << cfxGetLastError(rk.comm);
  return comm;
}

cfxResult_t run(bool allReduce, const void* send, void* recv, size_t count, cfxDataType_t t, cfxRedOp_t op, int root,
                cfxComm_t comm) {
  return allReduce ? cfxAllReduce(send, recv, count, t, op, comm, nullptr)
                   : cfxReduce(send, recv, count, t, op, root, comm, nullptr);
}

// One call on the path, in place if `inPlace` (for this rank), against the same inputs on the
// staged path.
std::string compareOnce(Rank& rk, cfxComm_t staged, bool allReduce, cfxDataType_t t, cfxRedOp_t op, size_t count,
                        bool inPlace) {
  const int root = rk.nranks - 1;
  const size_t bytes = count * typeSize(t);
  const auto input = randomData(t, count, 7919u * (rk.rank + 1) + static_cast<uint32_t>(count) + 31u * t + op);
  std::vector<std::byte> want(bytes, std::byte{0x5a});
  if (run(allReduce, input.data(), want.data(), count, t, op, root, staged) != cfxSuccess) {
    return std::string("staged: ") + cfxGetLastError(staged);
  }
  std::vector<std::byte> buf = input, out(bytes, std::byte{0x5a});
  void* recv = inPlace ? buf.data() : out.data();
  if (run(allReduce, buf.data(), recv, count, t, op, root, rk.comm) != cfxSuccess) {
    return std::string("single copy: ") + cfxGetLastError(rk.comm);
  }
  if ((allReduce || rk.rank == root) && std::memcmp(recv, want.data(), bytes) != 0) {
    size_t i = 0;
    const auto* got = static_cast<const std::byte*>(recv);
    while (std::memcmp(got + i * typeSize(t), want.data() + i * typeSize(t), typeSize(t)) == 0) ++i;
    return std::string(allReduce ? "AllReduce" : "Reduce") + (inPlace ? " in place " : " out of place ") +
           typeName(t) + " " + opName(op) + " count " + std::to_string(count) + " on " + std::to_string(rk.nranks) +
           " ranks: rank " + std::to_string(rk.rank) + " differs from the staged path at element " + std::to_string(i);
  }
  if (!inPlace && std::memcmp(buf.data(), input.data(), bytes) != 0) {
    return "rank " + std::to_string(rk.rank) + "'s input changed out of place";
  }
  return "";
}

class SingleCopyReduce : public ::testing::TestWithParam<int> {};

TEST_P(SingleCopyReduce, MatchesTheStagedPathBitwise) {
  runRanks(GetParam(), [](Rank& rk) {
    cfxComm_t staged = stagedComm(rk);
    // 1, odd, and several of the path's chunks (256 KiB at 2 to 4 ranks) in every slice. Every op
    // of every datatype at the small counts; at the large one (the chunking, which depends on the
    // element's size, not on the op) every datatype with two of the ops in turn, so that each op
    // meets at least three of the four element sizes there: a fifth of the calls that took most of
    // the test's time.
    const size_t large = (size_t{1} << 20) + 7;
    for (size_t count : {size_t{1}, size_t{4099}, large}) {
      for (bool inPlace : {true, false}) {
        for (int t = 0; t < cfxNumTypes; ++t) {
          for (int op = 0; op < cfxNumOps; ++op) {
            if (count == large && op != (t + (inPlace ? 0 : 2)) % cfxNumOps) continue;
            for (bool allReduce : {true, false}) {
              ASSERT_EQ(compareOnce(rk, staged, allReduce, static_cast<cfxDataType_t>(t), static_cast<cfxRedOp_t>(op),
                                    count, inPlace),
                        "");
            }
          }
        }
        ASSERT_EQ(compareOnce(rk, staged, true, cfxFloat32, cfxSumExact, count, inPlace), "");
        ASSERT_EQ(compareOnce(rk, staged, true, cfxBfloat16, cfxAvgExact, count, inPlace), "");
      }
    }
    cfxCommDestroy(staged);
  }, forced());
}

// Ranks in place and out of place in one call: on the path up to 16 MiB, and above it every rank
// learns at the call's first barrier that one is out of place and stays staged.
TEST_P(SingleCopyReduce, RanksInPlaceAndOutOfPlaceMix) {
  runRanks(GetParam(), [](Rank& rk) {
    cfxComm_t staged = stagedComm(rk);
    const size_t count = (size_t{1} << 19) + 3;
    for (bool allReduce : {true, false}) {
      ASSERT_EQ(compareOnce(rk, staged, allReduce, cfxBfloat16, cfxSum, count, rk.rank != 1), "");
      ASSERT_EQ(compareOnce(rk, staged, allReduce, cfxFloat32, cfxAvg, count, rk.rank != rk.nranks - 1), "");
      ASSERT_EQ(compareOnce(rk, staged, allReduce, cfxFloat32, cfxSum, (size_t{4} << 20) + 3, rk.rank != 0), "");
    }
    cfxCommDestroy(staged);
  }, forced());
}

// One rank whose threshold keeps it off the path: a mismatch on every rank that says why, not a
// hang or wrong data.
TEST(SingleCopyReduceSettings, DifferentThresholdsAreAMismatch) {
  RunOptions o;
  o.env = {"CFX_CMA=1", "CFX_REGISTERED=0", "CFX_TIMEOUT=20"};
  runRanks(3, [](Rank& rk) {
    setenv("CFX_CMA_REDUCE_MIN_BYTES", rk.rank == 1 ? "1099511627776" : "1", 1);
    cfxComm_t comm = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, 0, rk.rank, &comm, nullptr));
    unsetenv("CFX_CMA_REDUCE_MIN_BYTES");
    std::vector<float> buf(1 << 16, 1.0f);
    const cfxResult_t r = cfxAllReduce(buf.data(), buf.data(), buf.size(), cfxFloat32, cfxSum, comm, nullptr);
    EXPECT_EQ(r, cfxInvalidUsage) << cfxGetLastError(comm);
    EXPECT_NE(std::string(cfxGetLastError(comm)).find("path settings"), std::string::npos) << cfxGetLastError(comm);
    cfxCommDestroy(comm);
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Ranks, SingleCopyReduce, ::testing::Values(2, 3, 5));

}  // namespace
}  // namespace cfxtest
