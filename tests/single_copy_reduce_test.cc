// Large AllReduce and Reduce in place over cross-memory attach (ops/single_copy.cc, issue #31
// section 3): bitwise the staged path's results (the same call out of place, which stays on the
// staged path), every datatype and op, counts 1, odd and several chunks, at 2, 3 and 5 ranks; a
// rank out of place sends every rank to the staged path, with the same results; ranks whose
// settings put the same call on different paths fail with a mismatch. The exact values
// at every size are collectives_test's ForcedCma cases.
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

cfxResult_t run(bool allReduce, const void* send, void* recv, size_t count, cfxDataType_t t, cfxRedOp_t op, int root,
                cfxComm_t comm) {
  return allReduce ? cfxAllReduce(send, recv, count, t, op, comm, nullptr)
                   : cfxReduce(send, recv, count, t, op, root, comm, nullptr);
}

// One call in place (`inPlace` says so for this rank) against the same inputs out of place.
std::string compareOnce(Rank& rk, bool allReduce, cfxDataType_t t, cfxRedOp_t op, size_t count, bool inPlace) {
  const int root = rk.nranks - 1;
  const size_t bytes = count * typeSize(t);
  const auto input = randomData(t, count, 7919u * (rk.rank + 1) + static_cast<uint32_t>(count) + 31u * t + op);
  std::vector<std::byte> staged(bytes, std::byte{0x5a});
  if (run(allReduce, input.data(), staged.data(), count, t, op, root, rk.comm) != cfxSuccess) {
    return std::string("out of place: ") + cfxGetLastError(rk.comm);
  }
  std::vector<std::byte> buf = input, out(bytes, std::byte{0x5a});
  void* recv = inPlace ? buf.data() : out.data();
  if (run(allReduce, buf.data(), recv, count, t, op, root, rk.comm) != cfxSuccess) {
    return std::string("in place: ") + cfxGetLastError(rk.comm);
  }
  if ((allReduce || rk.rank == root) && std::memcmp(recv, staged.data(), bytes) != 0) {
    size_t i = 0;
    const auto* got = static_cast<const std::byte*>(recv);
    while (std::memcmp(got + i * typeSize(t), staged.data() + i * typeSize(t), typeSize(t)) == 0) ++i;
    return std::string(allReduce ? "AllReduce" : "Reduce") + " " + typeName(t) + " " + opName(op) + " count " +
           std::to_string(count) + " on " + std::to_string(rk.nranks) + " ranks: rank " + std::to_string(rk.rank) +
           " differs from the staged path at element " + std::to_string(i);
  }
  return "";
}

class SingleCopyReduce : public ::testing::TestWithParam<int> {};

TEST_P(SingleCopyReduce, InPlaceMatchesTheStagedPathBitwise) {
  runRanks(GetParam(), [](Rank& rk) {
    // 1, odd, and several of the path's chunks (256 KiB at 2 to 4 ranks) in every slice.
    for (size_t count : {size_t{1}, size_t{4099}, (size_t{1} << 20) + 7}) {
      for (int t = 0; t < cfxNumTypes; ++t) {
        for (int op = 0; op < cfxNumOps; ++op) {
          for (bool allReduce : {true, false}) {
            ASSERT_EQ(compareOnce(rk, allReduce, static_cast<cfxDataType_t>(t), static_cast<cfxRedOp_t>(op), count, true),
                      "");
          }
        }
      }
      ASSERT_EQ(compareOnce(rk, true, cfxFloat32, cfxSumExact, count, true), "");
      ASSERT_EQ(compareOnce(rk, true, cfxBfloat16, cfxAvgExact, count, true), "");
    }
  }, forced());
}

// One rank out of place: every rank learns it at the call's first barrier and stays staged.
TEST_P(SingleCopyReduce, OneRankOutOfPlaceKeepsEveryRankStaged) {
  runRanks(GetParam(), [](Rank& rk) {
    const size_t count = (size_t{1} << 19) + 3;
    for (bool allReduce : {true, false}) {
      ASSERT_EQ(compareOnce(rk, allReduce, cfxBfloat16, cfxSum, count, rk.rank != 1), "");
      ASSERT_EQ(compareOnce(rk, allReduce, cfxFloat32, cfxAvg, count, rk.rank != rk.nranks - 1), "");
    }
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
