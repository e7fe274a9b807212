// The staged reductions' hand-off stores (comm/src/ops/handoff_stores.h): which calls a rank times,
// the verdict of each trial, and the trials that start again as the calls go on. The collectives
// on either kind, and through a trial, are exact: collectives_test.cc (ForcedStores, LargeCount).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/handoff_stores.h"
#include "ops/size_classes.h"

namespace conflux {
namespace {

using H = HandoffStores;
using M = H::Mode;
constexpr size_t kCall = H::kMinBytes;  // the first size class

// Runs `calls` calls of `bytes`, recording each timed call at `streamingRate` or `ordinaryRate`
// bytes per ns; returns the picks.
std::vector<H::Pick> runCalls(H& h, size_t bytes, uint64_t calls, double ordinaryRate, double streamingRate) {
  std::vector<H::Pick> picks;
  for (uint64_t i = 0; i < calls; ++i) {
    const H::Pick p = h.next(bytes);
    picks.push_back(p);
    if (p.timed) {
      const double rate = p.streaming ? streamingRate : ordinaryRate;
      h.record(bytes, p.streaming, static_cast<int64_t>(static_cast<double>(bytes) / rate));
    }
  }
  return picks;
}

TEST(HandoffStores, SizeClassesStartAt16MiBAndGrowFourfold) {
  EXPECT_EQ(H::sizeClass(kCall), 0);
  EXPECT_EQ(H::sizeClass(4 * kCall - 1), 0);
  EXPECT_EQ(H::sizeClass(4 * kCall), 1);
  EXPECT_EQ(H::sizeClass(16 * kCall), 2);
  EXPECT_EQ(H::sizeClass(size_t{1} << 40), 2);
  EXPECT_EQ(sizeClassRange(0, kCall, H::kSizeClasses), "from 16 MiB to 64 MiB");
  EXPECT_EQ(sizeClassRange(2, kCall, H::kSizeClasses), "from 256 MiB");
}

TEST(HandoffStores, SmallCallsAndForcedKindsAreNeverTimed) {
  H h;
  for (int i = 0; i < 5; ++i) {
    const H::Pick p = h.next(kCall - 1);
    EXPECT_FALSE(p.streaming);
    EXPECT_FALSE(p.timed);
  }
  EXPECT_EQ(h.mode(kCall - 1), M::kOrdinary);
  for (M forced : {M::kStreaming, M::kOrdinary}) {
    H f(forced);
    for (int i = 0; i < 2 * static_cast<int>(H::kRetrialCalls) + 3; ++i) {
      const H::Pick p = f.next(kCall);
      EXPECT_EQ(p.streaming, forced == M::kStreaming) << "call " << i;
      EXPECT_FALSE(p.timed) << "call " << i;
    }
    EXPECT_EQ(f.mode(kCall), forced);
    EXPECT_EQ(f.mode(kCall - 1), M::kOrdinary);
  }
}

TEST(HandoffStores, TrialTimesTheFirstTwoCallsStreamingFirst) {
  H h;
  const auto picks = runCalls(h, kCall, 6, 1.0, 1.0);
  // Streaming stores, then ordinary ones, both timed; then the verdict, untimed.
  EXPECT_TRUE(picks[0].timed);
  EXPECT_TRUE(picks[0].streaming);
  EXPECT_TRUE(picks[1].timed);
  EXPECT_FALSE(picks[1].streaming);
  for (int i = 2; i < 6; ++i) {
    EXPECT_FALSE(picks[i].timed) << "call " << i;
    EXPECT_FALSE(picks[i].streaming) << "a tie keeps ordinary stores (call " << i << ")";
  }
}

TEST(HandoffStores, StreamingStoresOnlyFromTheSpellMargin) {
  const double m = H::kSpellMargin;
  struct Case {
    double streaming;
    M want;
  } cases[] = {{m, M::kStreaming}, {3.0, M::kStreaming}, {0.99 * m, M::kOrdinary}, {1.1, M::kOrdinary},
               {0.5, M::kOrdinary}};
  for (const Case& c : cases) {
    H h;
    runCalls(h, kCall, 2, 1.0, c.streaming);
    EXPECT_EQ(h.mode(kCall), c.want) << "streaming at " << c.streaming << "x";
    const H::Pick p = h.next(kCall);
    EXPECT_EQ(p.streaming, c.want == M::kStreaming);
    EXPECT_FALSE(p.timed);
  }
}

TEST(HandoffStores, TrialsStartAgainEveryRetrialCallsAndFollowTheSpells) {
  H h;
  const uint64_t r = H::kRetrialCalls;
  // A spell from the start: streaming stores kept until the next trial.
  auto picks = runCalls(h, kCall, r, 1.0, 2.5);
  EXPECT_EQ(h.mode(kCall), M::kStreaming);
  for (uint64_t i = 2; i < r; ++i) EXPECT_TRUE(picks[i].streaming && !picks[i].timed) << "call " << i;
  // Call r starts the next trial: the spell is over.
  picks = runCalls(h, kCall, r, 1.0, 0.9);
  EXPECT_TRUE(picks[0].timed && picks[0].streaming);
  EXPECT_TRUE(picks[1].timed && !picks[1].streaming);
  EXPECT_EQ(h.mode(kCall), M::kOrdinary);
  for (uint64_t i = 2; i < r; ++i) EXPECT_TRUE(!picks[i].streaming && !picks[i].timed) << "call " << r + i;
  // A spell again at call 2r.
  picks = runCalls(h, kCall, 2, 1.0, 1.5);
  EXPECT_TRUE(picks[0].timed && picks[1].timed);
  EXPECT_EQ(h.mode(kCall), M::kStreaming);
}

TEST(HandoffStores, AnUnrecordedCallLeavesTheVerdict) {
  // A trial call that took another path (zero-copy) is never recorded: no verdict from half a trial.
  H h;
  runCalls(h, kCall, 2, 1.0, 2.0);
  ASSERT_EQ(h.mode(kCall), M::kStreaming);
  for (uint64_t i = 2; i < H::kRetrialCalls; ++i) h.next(kCall);
  const H::Pick streaming = h.next(kCall);  // not recorded
  ASSERT_TRUE(streaming.timed && streaming.streaming);
  const H::Pick ordinary = h.next(kCall);
  ASSERT_TRUE(ordinary.timed && !ordinary.streaming);
  h.record(kCall, false, 1);
  EXPECT_EQ(h.mode(kCall), M::kStreaming);
}

TEST(HandoffStores, SizeClassesKeepTheirOwnTrials) {
  H h;
  runCalls(h, kCall, 2, 1.0, 2.0);
  runCalls(h, 4 * kCall, 2, 1.0, 1.0);
  EXPECT_EQ(h.mode(kCall), M::kStreaming);
  EXPECT_EQ(h.mode(4 * kCall), M::kOrdinary);
  EXPECT_EQ(h.mode(16 * kCall), M::kOrdinary) << "no trial yet";
  const H::Pick first = h.next(16 * kCall);
  EXPECT_TRUE(first.timed && first.streaming) << "a class's first call starts its trial";
  EXPECT_EQ(h.mode(kCall), M::kStreaming) << "another class's trial leaves this one";
}

}  // namespace
}  // namespace conflux
