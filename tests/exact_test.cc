// The exact reductions (cfxSumExact, cfxAvgExact) at 1 to 8 ranks on one host: every case of
// exact_cases.h against the independent reference, on every shared-memory algorithm forced, by
// config and by CFX_REDUCE_EXACT as a communicator's default, and a rank that asks for the exact
// op while another does not is a mismatch.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exact_cases.h"
#include "harness.h"

namespace cfxtest {
namespace {

class Exact : public ::testing::TestWithParam<int> {};

TEST_P(Exact, CorrectlyRoundedEverywhere) {
  runRanks(GetParam(), [](Rank& rk) { ASSERT_EQ(exactMatrix(rk), ""); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Exact, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

class ExactForced : public ::testing::TestWithParam<const char*> {};

TEST_P(ExactForced, EveryAlgorithmGivesTheRoundedSum) {
  RunOptions o;
  o.env = {std::string("CFX_ALGO=") + GetParam(), "CFX_REGISTERED=0"};
  runRanks(3, [](Rank& rk) { ASSERT_EQ(exactAllReduceCases(rk), ""); }, o);
}

INSTANTIATE_TEST_SUITE_P(Algos, ExactForced, ::testing::Values("direct", "rsag", "mailbox"),
                         [](const auto& info) { return std::string(info.param); });

TEST(ExactDefault, FromTheEnvironment) {
  RunOptions o;
  o.env = {"CFX_REDUCE_EXACT=1"};
  runRanks(3, [](Rank& rk) { ASSERT_EQ(exactMatrix(rk, cfxSum, cfxAvg), ""); }, o);
}

TEST(ExactDefault, FromTheConfigAndKeptBySplit) {
  runRanks(4, [](Rank& rk) {
    cfxConfig_t config = CFX_CONFIG_INITIALIZER;
    config.reduceExact = 1;
    cfxComm_t exact = nullptr, child = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, 0, rk.rank, &exact, &config));
    Rank r{rk.rank, rk.nranks, exact};
    ASSERT_EQ(exactAllReduceCases(r, cfxSum, cfxAvg), "");
    CFX_ASSERT_OK(cfxCommSplit(exact, 0, rk.rank, &child, nullptr));  // inherits the mode
    const float mine[4] = {1e30f, 1.0f, -1e30f, 0.0f};
    float in = mine[rk.rank], plain = -1, exactSum = -1;
    CFX_ASSERT_OK(cfxAllReduce(&in, &exactSum, 1, cfxFloat32, cfxSum, child, nullptr));
    CFX_ASSERT_OK(cfxAllReduce(&in, &plain, 1, cfxFloat32, cfxSum, rk.comm, nullptr));
    EXPECT_EQ(exactSum, 1.0f);
    EXPECT_EQ(plain, 0.0f);  // in rank order, rounded at each step: the exact mode is what differs
    config.reduceExact = 7;
    cfxComm_t bad = nullptr;
    EXPECT_EQ(cfxCommSplit(rk.comm, 0, rk.rank, &bad, &config), cfxInvalidArgument);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("reduceExact"), std::string::npos);
    CFX_ASSERT_OK(cfxCommDestroy(child));
    CFX_ASSERT_OK(cfxCommDestroy(exact));
  });
}

// One rank asks for the exact sum, the others for the plain one: a mismatch on every rank.
TEST(ExactDefault, ExactAgainstPlainIsAMismatch) {
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20"};
  runRanks(3, [](Rank& rk) {
    float in[64] = {}, out[64];
    const cfxResult_t r = cfxAllReduce(in, out, 64, cfxFloat32, rk.rank == 1 ? cfxSumExact : cfxSum, rk.comm, nullptr);
    EXPECT_EQ(r, cfxInvalidUsage) << cfxGetLastError(rk.comm);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("sum_exact"), std::string::npos) << cfxGetLastError(rk.comm);
  }, o);
}

}  // namespace
}  // namespace cfxtest
