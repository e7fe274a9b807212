// Every collective x datatype x op, in place and out of place, counts 0, 1, small odd, multi-chunk
// odd and >= 4M elements, on 1 to 8 ranks, against exact expected values.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "harness.h"
#include "cases.h"
#include "coll_case.h"

namespace cfxtest {
namespace {

using C = CollKind;

constexpr size_t kLargeCount = (size_t{4} << 20) + 1;

class CollectiveTest : public ::testing::TestWithParam<std::tuple<C, int>> {};

TEST_P(CollectiveTest, ExactResults) {
  auto [c, n] = GetParam();
  runRanks(n, [c = c](Rank& rk) { runMatrix(rk, c); });
}

// Algorithms forced at every size: mailbox (small inputs only; larger ones fall back), direct and
// rsag (which also turn the mailbox path off, so the phased path of every collective is checked
// at small counts too).
class AlgorithmTest : public ::testing::TestWithParam<std::tuple<C, int, const char*>> {};

TEST_P(AlgorithmTest, ExactResults) {
  auto [c, n, algo] = GetParam();
  RunOptions o;
  o.env = {std::string("CFX_ALGO=") + algo};
  runRanks(n, [c = c](Rank& rk) {
    runMatrix(rk, c);
    ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, kLargeCount, false), "");
  }, o);
}

INSTANTIATE_TEST_SUITE_P(ForcedAlgorithms, AlgorithmTest,
                         ::testing::Combine(::testing::Values(C::kAllReduce, C::kReduce, C::kBroadcast, C::kAllGather,
                                                              C::kReduceScatter, C::kAlltoAll),
                                            ::testing::Values(2, 3, 8), ::testing::Values("mailbox", "direct", "rsag")),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks_" + std::get<2>(info.param);
                         });

TEST_P(CollectiveTest, LargeCount) {
  auto [c, n] = GetParam();
  runRanks(n, [c = c](Rank& rk) {
    // >= 4M elements: the types of every width, with the op that stresses each one.
    const std::tuple<cfxDataType_t, cfxRedOp_t> cases[] = {
        {cfxFloat32, cfxSum}, {cfxInt8, cfxMax}, {cfxBfloat16, cfxAvg}, {cfxFloat8e5m2, cfxSum}};
    for (auto [t, op] : cases) {
      for (bool inPlace : {false, true}) {
        ASSERT_EQ(runCase(rk, c, t, op, kLargeCount, inPlace), "");
      }
      if (!reduces(c)) break;  // data movement: one type is enough at this size
    }
  });
}

// The single-copy path (process_vm_readv) forced for every size that does not fit a mailbox, at
// every rank count (by default it is off when ranks outnumber CPUs, as on a 2-core machine);
// AllReduce and Reduce take it in place.
class SingleCopyTest : public ::testing::TestWithParam<std::tuple<C, int>> {};

TEST_P(SingleCopyTest, ExactResults) {
  auto [c, n] = GetParam();
  RunOptions o;
  o.env = {"CFX_CMA=1", "CFX_CMA_MIN_BYTES=1", "CFX_CMA_REDUCE_MIN_BYTES=1"};
  runRanks(n, [c = c](Rank& rk) {
    runMatrix(rk, c);
    for (bool inPlace : {false, true}) ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, kLargeCount, inPlace), "");
  }, o);
}

INSTANTIATE_TEST_SUITE_P(ForcedCma, SingleCopyTest,
                         ::testing::Combine(::testing::Values(C::kBroadcast, C::kAllGather, C::kAlltoAll, C::kAllReduce,
                                                              C::kReduce),
                                            ::testing::Values(2, 3, 5, 8)),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// Large copies into user buffers, and the staged reductions' hand-offs (ops/handoff_stores.h), with
// either kind of store forced (by default each rank times both on its first large calls, which
// LargeCount above covers). AllGather and Broadcast this large stage only on the staged path, which
// CFX_GATHER_PATH forces (gather_path_test.cc covers the other).
class StoresTest : public ::testing::TestWithParam<std::tuple<C, int, const char*>> {};

TEST_P(StoresTest, ExactResults) {
  auto [c, n, streaming] = GetParam();
  RunOptions o;
  o.env = {std::string("CFX_STREAMING_STORES=") + streaming, "CFX_GATHER_PATH=staged"};
  runRanks(n, [c = c](Rank& rk) {
    for (bool inPlace : {false, true}) ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, kLargeCount, inPlace), "");
    if (reduces(c)) {
      ASSERT_EQ(runCase(rk, c, cfxBfloat16, cfxAvg, kLargeCount, false), "");
    }
  }, o);
}

INSTANTIATE_TEST_SUITE_P(ForcedStores, StoresTest,
                         ::testing::Combine(::testing::Values(C::kAllReduce, C::kReduce, C::kReduceScatter,
                                                              C::kBroadcast, C::kAllGather),
                                            ::testing::Values(2, 3), ::testing::Values("0", "1")),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks_streaming" +
                                  std::get<2>(info.param);
                         });

std::string caseName(const ::testing::TestParamInfo<std::tuple<C, int>>& info) {
  return std::string(collName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, CollectiveTest,
                         ::testing::Combine(::testing::Values(C::kAllReduce, C::kReduce, C::kBroadcast, C::kAllGather,
                                                              C::kReduceScatter, C::kAlltoAll),
                                            ::testing::Range(1, 9)),
                         caseName);

}  // namespace
}  // namespace cfxtest
