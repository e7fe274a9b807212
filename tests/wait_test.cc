// How a wait is set up (context.h): the spin and yield counts from CFX_SPIN and CFX_YIELDS, which
// follow whether each local rank has a CPU of its own; and allFinished, which answers from the
// lowest counter it last read only while that proves the answer (two ranks' contexts over one
// real segment).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <vector>

#include "common/error.h"
#include "context.h"
#include "two_contexts.h"

namespace conflux {
namespace {

TEST(WaitSettings, YieldsAndSpinFollowWhetherTheRanksHaveCpus) {
  WaitSettings fits = WaitSettings::fromEnv(0, true);
  EXPECT_EQ(fits.spin, 2000);
  EXPECT_EQ(fits.yields, 8);
  WaitSettings shared = WaitSettings::fromEnv(0, false);
  EXPECT_EQ(shared.spin, 0);
  EXPECT_EQ(shared.yields, 1000) << "ranks sharing CPUs: a wait hands its core over before it sleeps";
  setenv("CFX_YIELDS", "3", 1);
  EXPECT_EQ(WaitSettings::fromEnv(0, false).yields, 3);
  setenv("CFX_YIELDS", "many", 1);
  try {
    WaitSettings::fromEnv(0, true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CFX_YIELDS"), std::string::npos) << e.what();
  }
  unsetenv("CFX_YIELDS");
}

TEST(WaitSettings, RunAheadWindowFromOneToTheMailboxesLessTwo) {
  EXPECT_EQ(WaitSettings::fromEnv(0, true).runAhead, 126);
  setenv("CFX_RUNAHEAD", "1", 1);
  EXPECT_EQ(WaitSettings::fromEnv(0, true).runAhead, 1);
  setenv("CFX_RUNAHEAD", "126", 1);
  EXPECT_EQ(WaitSettings::fromEnv(0, true).runAhead, 126);
  for (const char* bad : {"0", "127", "-1", "far"}) {
    setenv("CFX_RUNAHEAD", bad, 1);
    try {
      WaitSettings::fromEnv(0, true);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("CFX_RUNAHEAD"), std::string::npos) << e.what();
    }
  }
  unsetenv("CFX_RUNAHEAD");
}

TEST(Context, AllFinishedAnswersOnlyWhatEveryRankReached) {
  TwoContexts t;
  Context& c = *t.c[0];
  EXPECT_TRUE(c.allFinished(0));
  EXPECT_FALSE(c.allFinished(1));
  t.c[0]->finishOp(5);
  t.c[1]->finishOp(2);
  EXPECT_TRUE(c.allFinished(2));   // remembers 2, the lowest, not 5
  EXPECT_FALSE(c.allFinished(3));  // so rank 1's 2 still answers this
  std::vector<int> lagging;
  EXPECT_FALSE(c.allFinished(3, &lagging));
  EXPECT_EQ(lagging, std::vector<int>{1});
  t.c[1]->finishOp(4);
  EXPECT_TRUE(c.allFinished(4));  // read again: rank 1 moved on
  EXPECT_FALSE(c.allFinished(5));
  t.c[1]->finishOp(7);
  EXPECT_TRUE(c.allFinished(5));
  EXPECT_FALSE(c.allFinished(6));  // rank 0 is at 5
}

}  // namespace
}  // namespace conflux
