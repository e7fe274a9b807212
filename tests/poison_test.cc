// A failure in shared memory belongs to an operation (context.h, shm_layout.h): two ranks' contexts
// over one real segment, in one process. The failing rank is ahead; the other is still in an
// earlier collective, which the failure does not reach, so it can finish it, and the failure reaches
// it from the failed operation on. Point-to-point work is always reached. A later failure of an
// earlier operation lowers the number; an abort reaches everything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "common/error.h"
#include "context.h"
#include "shm_layout.h"
#include "two_contexts.h"

namespace conflux {
namespace {

using TwoRanks = TwoContexts;

TEST(Poison, ReachesTheFailedOperationAndLaterOnes) {
  TwoRanks t;
  t.c[0]->finishOp(4);  // rank 0 is in operation 5
  t.c[1]->finishOp(3);  // rank 1 is still in operation 4
  EXPECT_FALSE(t.c[1]->health().poisonReaches(false));
  t.c[0]->health().poison(Status::kInvalidUsage, "collective mismatch (test)");
  EXPECT_TRUE(t.c[0]->health().poisonReaches(false));
  EXPECT_FALSE(t.c[1]->health().poisonReaches(false)) << "operation 4 is not the failed one";
  EXPECT_TRUE(t.c[1]->health().poisonReaches(true)) << "point-to-point work is always reached";
  EXPECT_NO_THROW(t.c[1]->health().checkAbortAndPoison([] { return std::string("operation 4"); }, false));
  t.c[1]->finishOp(4);  // rank 1 finished operation 4 and starts 5: the failed one
  EXPECT_TRUE(t.c[1]->health().poisonReaches(false));
  try {
    t.c[1]->health().checkAbortAndPoison([] { return std::string("operation 5"); }, false);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidUsage);  // a mismatch is every rank's usage error
    EXPECT_NE(std::string(e.what()).find("collective mismatch (test)"), std::string::npos) << e.what();
  }
  std::string message;
  EXPECT_EQ(t.c[1]->health().poisonStatus(&message), Status::kInvalidUsage);
}

TEST(Poison, AnEarlierFailureLowersTheNumber) {
  TwoRanks t;
  t.c[0]->finishOp(9);
  t.c[1]->finishOp(2);
  t.c[0]->health().poison(Status::kRemoteError, "first");  // concerns operations 10 and on
  EXPECT_FALSE(t.c[1]->health().poisonReaches(false));
  t.c[1]->health().poison(Status::kTimeout, "second");  // rank 1 fails in operation 3
  EXPECT_TRUE(t.c[1]->health().poisonReaches(false));
  std::string message;
  EXPECT_EQ(t.c[1]->health().poisonStatus(&message), Status::kRemoteError);  // the first failure's words stay
  EXPECT_EQ(message, "first");
}

TEST(Poison, AnAbortReachesEverything) {
  TwoRanks t;
  t.c[0]->finishOp(9);
  t.c[1]->finishOp(2);
  t.c[0]->health().abort();
  EXPECT_TRUE(t.c[1]->health().poisonReaches(false));
}

}  // namespace
}  // namespace conflux
