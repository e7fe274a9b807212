// Large AllGather and Broadcast (more than 16 MiB of output) take the staged path or the single
// copy, as local rank 0 chooses (comm/src/ops/path_trial.h): each path, and the trial that moves
// from one to the other within a communicator's calls, gives exact results, and every rank takes
// rank 0's path whatever its own CFX_GATHER_PATH says (ranks on different paths would hang or
// read garbage).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <tuple>

#include "harness.h"
#include "coll_case.h"

namespace cfxtest {
namespace {

using C = CollKind;

// 16 MiB and 4 bytes of float32 per rank: every rank count's AllGather and Broadcast are past
// 16 MiB of output.
constexpr size_t kCount = (size_t{4} << 20) + 1;
// Enough calls for the trial's warm calls (8), its timed calls (2 to 4) and calls after it; a
// forced path runs a few, in place and out of place (each 16 MiB call took a second under ASan).
constexpr int kTrialCalls = 14;
constexpr int kForcedCalls = 4;

class GatherPathTest : public ::testing::TestWithParam<std::tuple<C, int, const char*>> {};

TEST_P(GatherPathTest, EveryPathAndTheTrialAreExact) {
  auto [c, n, path] = GetParam();
  RunOptions o;
  o.env = {"CFX_CMA=1", std::string("CFX_GATHER_PATH=") + path};
  const int calls = std::string(path) == "auto" ? kTrialCalls : kForcedCalls;
  runRanks(n, [c = c, calls](Rank& rk) {
    for (int i = 0; i < calls; ++i) {
      ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, kCount, i % 2 == 1), "") << "call " << i;
    }
  }, o);
}

INSTANTIATE_TEST_SUITE_P(Paths, GatherPathTest,
                         ::testing::Combine(::testing::Values(C::kAllGather, C::kBroadcast), ::testing::Values(2, 3),
                                            ::testing::Values("staged", "single", "auto")),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) + "ranks_" + std::get<2>(info.param);
                         });

void othersDisagree(const char* rankZero, const char* others) {
  RunOptions o;
  o.initComm = false;
  o.env = {"CFX_CMA=1"};
  runRanks(3, [&](Rank& rk) {
    setenv("CFX_GATHER_PATH", rk.rank == 0 ? rankZero : others, 1);
    CFX_ASSERT_OK(cfxCommInitFromEnv(&rk.comm));
    for (C c : {C::kAllGather, C::kBroadcast}) {
      for (bool inPlace : {false, true}) ASSERT_EQ(runCase(rk, c, cfxFloat32, cfxSum, kCount, inPlace), "");
    }
  }, o);
}

TEST(GatherPath, RanksFollowLocalRankZerosSingleCopy) { othersDisagree("single", "staged"); }
TEST(GatherPath, RanksFollowLocalRankZerosStagedPath) { othersDisagree("staged", "single"); }

}  // namespace
}  // namespace cfxtest
