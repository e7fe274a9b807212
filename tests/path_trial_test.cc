// Local rank 0's choice between the staged path and the single copy for large AllGather and
// Broadcast (comm/src/ops/path_trial.h): its schedule of calls and its verdict.
#include <gtest/gtest.h>

#include <cstdlib>

#include <vector>

#include "common/error.h"
#include "ops/path_trial.h"

namespace conflux {
namespace {

constexpr size_t kBytes = size_t{32} << 20;

TEST(PathTrial, WarmsUpOnTheSingleCopyThenAlternatesStagedFirst) {
  PathTrial t;
  for (int i = 0; i < PathTrial::kWarmCalls; ++i) {
    const PathTrial::Pick p = t.next(kBytes);
    EXPECT_EQ(p.path, GatherPath::kSingleCopy) << "warm call " << i;
    EXPECT_FALSE(p.timed) << "warm call " << i;
  }
  // Within the decisive margin: two calls of each, staged first, then the verdict.
  const GatherPath order[] = {GatherPath::kStaged, GatherPath::kSingleCopy, GatherPath::kStaged,
                              GatherPath::kSingleCopy};
  const int64_t ns[] = {1000, 1050, 1100, 1000};
  for (int i = 0; i < 4; ++i) {
    const PathTrial::Pick p = t.next(kBytes);
    EXPECT_EQ(p.path, order[i]) << "trial call " << i;
    EXPECT_TRUE(p.timed) << "trial call " << i;
    EXPECT_EQ(t.mode(kBytes), PathTrial::Mode::kAuto) << "decided after " << i << " calls";
    t.record(kBytes, p.path, ns[i]);
  }
  EXPECT_EQ(t.mode(kBytes), PathTrial::Mode::kSingleCopy);  // the fastest calls tie: the single copy stays
  for (int i = 0; i < 3; ++i) {
    const PathTrial::Pick p = t.next(kBytes);
    EXPECT_EQ(p.path, GatherPath::kSingleCopy);
    EXPECT_FALSE(p.timed);
  }
  // Each size class has a trial of its own.
  EXPECT_EQ(t.mode(size_t{64} << 20), PathTrial::Mode::kAuto);
  EXPECT_EQ(t.mode(PathTrial::kMinBytes), PathTrial::Mode::kSingleCopy);
  EXPECT_EQ(PathTrial::sizeClass(PathTrial::kMinBytes), 0);
  EXPECT_EQ(PathTrial::sizeClass(size_t{64} << 20), 1);
  EXPECT_EQ(PathTrial::sizeClass(size_t{256} << 20), 2);
  EXPECT_EQ(PathTrial::sizeClass(size_t{4} << 30), 2);
}

TEST(PathTrial, OneCallOfEachDecidesOnlyAcrossTheDecisiveMargin) {
  using M = PathTrial::Mode;
  EXPECT_EQ(PathTrial::decide({}, {1.0}), M::kAuto);
  EXPECT_EQ(PathTrial::decide({1.0}, {}), M::kAuto);
  EXPECT_EQ(PathTrial::decide({1.0}, {1.19}), M::kAuto);
  EXPECT_EQ(PathTrial::decide({1.19}, {1.0}), M::kAuto);
  EXPECT_EQ(PathTrial::decide({1.0}, {1.2}), M::kSingleCopy);
  EXPECT_EQ(PathTrial::decide({1.2}, {1.0}), M::kStaged);
  // Two of each: the fastest call of each path; staged must be kStagedMargin faster.
  EXPECT_EQ(PathTrial::decide({0.5, 1.09}, {1.0, 0.2}), M::kSingleCopy);
  EXPECT_EQ(PathTrial::decide({0.5, 1.1}, {1.0, 0.2}), M::kStaged);
  EXPECT_EQ(PathTrial::decide({1.0, 1.0}, {1.0, 1.0}), M::kSingleCopy);
}

TEST(PathTrial, AForcedPathIsNeverTimed) {
  for (PathTrial::Mode m : {PathTrial::Mode::kStaged, PathTrial::Mode::kSingleCopy}) {
    PathTrial t(m);
    for (int i = 0; i < 2 * PathTrial::kWarmCalls; ++i) {
      const PathTrial::Pick p = t.next(kBytes << (2 * (i % 3)));
      EXPECT_EQ(p.path, m == PathTrial::Mode::kStaged ? GatherPath::kStaged : GatherPath::kSingleCopy);
      EXPECT_FALSE(p.timed);
    }
  }
}

TEST(PathTrial, TheEnvironmentForcesAPathOrRefusesClearly) {
  setenv("CFX_GATHER_PATH", "staged", 1);
  EXPECT_EQ(PathTrial::modeFromEnv(), PathTrial::Mode::kStaged);
  setenv("CFX_GATHER_PATH", "single", 1);
  EXPECT_EQ(PathTrial::modeFromEnv(), PathTrial::Mode::kSingleCopy);
  setenv("CFX_GATHER_PATH", "auto", 1);
  EXPECT_EQ(PathTrial::modeFromEnv(), PathTrial::Mode::kAuto);
  setenv("CFX_GATHER_PATH", "fast", 1);
  EXPECT_THROW(PathTrial::modeFromEnv(), Error);
  unsetenv("CFX_GATHER_PATH");
  EXPECT_EQ(PathTrial::modeFromEnv(), PathTrial::Mode::kAuto);
}

}  // namespace
}  // namespace conflux
