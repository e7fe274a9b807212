// Copies into user buffers (comm/src/ops/copy.h): both kinds of stores copy every byte and nothing
// else, and a rank's chooser times both before it keeps the faster one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "ops/copy.h"

namespace conflux {
namespace {

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + seed * 17 + (i >> 8)) & 0xff);
  return v;
}

TEST(StoreChooser, BothStoresCopyEveryByteAndNothingElse) {
  const size_t sizes[] = {0, 1, 15, 16, 63, 64, 255, 256, 257, 4097, (size_t{1} << 20) + 13};
  for (bool streaming : {false, true}) {
    for (size_t n : sizes) {
      for (size_t dstOff : {0, 1, 7, 16}) {
        for (size_t srcOff : {0, 3}) {
          const auto src = pattern(n + srcOff + 1, 1);  // never empty: memcmp may not be given null
          std::vector<unsigned char> dst(n + dstOff + 64, 0xa5);
          copyOut(dst.data() + dstOff, src.data() + srcOff, n, streaming);
          ASSERT_EQ(std::memcmp(dst.data() + dstOff, src.data() + srcOff, n), 0)
              << "streaming " << streaming << " size " << n << " offsets " << dstOff << "/" << srcOff;
          for (size_t i = 0; i < dstOff; ++i) ASSERT_EQ(dst[i], 0xa5) << "byte before the destination changed";
          for (size_t i = dstOff + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xa5) << "byte after the destination changed";
        }
      }
    }
  }
}

TEST(StoreChooser, TimesBothKindsThenKeepsTheFaster) {
  const size_t block = size_t{1} << 20;
  const auto src = pattern(block, 2);
  std::vector<unsigned char> dst(block);
  StoreChooser chooser;
  const uint64_t copiesPerKind = StoreChooser::kTrialBytes / block;
  for (uint64_t i = 0; i + 1 < 2 * copiesPerKind; ++i) {
    std::memset(dst.data(), 0, block);
    chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes);
    ASSERT_EQ(dst, src);
    ASSERT_EQ(chooser.mode(), StoreChooser::Mode::kAuto) << "decided after " << i + 1 << " copies";
  }
  EXPECT_GT(chooser.rate(true), 0.0);
  EXPECT_GT(chooser.rate(false), 0.0);
  chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes);  // the last copy of the trial
  ASSERT_NE(chooser.mode(), StoreChooser::Mode::kAuto);
  const bool streamingFaster = chooser.rate(true) >= StoreChooser::kStreamingMargin * chooser.rate(false);
  EXPECT_EQ(chooser.mode(), streamingFaster ? StoreChooser::Mode::kStreaming : StoreChooser::Mode::kOrdinary);
  // Decided: no more timing, the choice stays.
  const double before = chooser.rate(true);
  const auto mode = chooser.mode();
  std::memset(dst.data(), 0, block);
  chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(chooser.rate(true), before);
  EXPECT_EQ(chooser.mode(), mode);
}

TEST(StoreChooser, ALongCopyIsTimedInPiecesAndDecidesMidway) {
  // One copy longer than the whole trial (as a registered AllGather's): both kinds are timed on
  // alternating pieces of it, and its rest is written with the kind kept.
  const size_t n = 2 * StoreChooser::kTrialBytes + 3 * StoreChooser::kTrialPieceBytes + 5;
  const auto src = pattern(n, 5);
  std::vector<unsigned char> dst(n);
  StoreChooser chooser;
  chooser.copy(dst.data(), src.data(), n, n);
  EXPECT_EQ(dst, src);
  EXPECT_NE(chooser.mode(n), StoreChooser::Mode::kAuto);
  EXPECT_GT(chooser.rate(true, n), 0.0);
  EXPECT_GT(chooser.rate(false, n), 0.0);
}

TEST(StoreChooser, TimedWorkAlternatesKindsAfterTheWarmUp) {
  // run() (registered AllReduce's spans): ordinary stores, untimed, until warmedUp(); then the
  // kinds alternate, each piece timed, until each has handled kTrialBytes.
  StoreChooser chooser(StoreChooser::Mode::kAuto, "test work", true);
  const size_t piece = size_t{1} << 20;
  std::vector<bool> kinds;
  auto work = [&](bool streaming) { kinds.push_back(streaming); };
  for (int i = 0; i < 100; ++i) chooser.run(piece, kStreamingMinBytes, work);
  EXPECT_EQ(kinds, std::vector<bool>(100, false)) << "streaming stores during the warm-up";
  EXPECT_EQ(chooser.mode(), StoreChooser::Mode::kAuto);
  EXPECT_EQ(chooser.rate(false), 0.0) << "the warm-up was timed";
  chooser.warmedUp();
  kinds.clear();
  const uint64_t perKind = StoreChooser::kTrialBytes / piece;
  for (uint64_t i = 0; i < 2 * perKind; ++i) chooser.run(piece, kStreamingMinBytes, work);
  ASSERT_EQ(kinds.size(), 2 * perKind);
  for (size_t i = 0; i < kinds.size(); ++i) ASSERT_EQ(kinds[i], i % 2 == 0) << "piece " << i;
  ASSERT_NE(chooser.mode(), StoreChooser::Mode::kAuto) << "undecided after the whole trial";
  const bool kept = chooser.mode() == StoreChooser::Mode::kStreaming;
  kinds.clear();
  for (int i = 0; i < 10; ++i) chooser.run(piece, kStreamingMinBytes, work);
  EXPECT_EQ(kinds, std::vector<bool>(10, kept)) << "the kept kind changed";
}

TEST(StoreChooser, EachSizeClassHasItsOwnTrial) {
  // 8-32 MiB, 32-128, 128-512, and everything from 512 MiB.
  EXPECT_EQ(StoreChooser::sizeClass(kStreamingMinBytes), 0);
  EXPECT_EQ(StoreChooser::sizeClass(4 * kStreamingMinBytes - 1), 0);
  EXPECT_EQ(StoreChooser::sizeClass(4 * kStreamingMinBytes), 1);
  EXPECT_EQ(StoreChooser::sizeClass(16 * kStreamingMinBytes), 2);
  EXPECT_EQ(StoreChooser::sizeClass(64 * kStreamingMinBytes), 3);
  EXPECT_EQ(StoreChooser::sizeClass(size_t{1} << 40), 3);
  // A class decided by its trial leaves the others undecided, and each then runs its own.
  StoreChooser chooser(StoreChooser::Mode::kAuto, "test work");
  const size_t piece = size_t{1} << 20, small = kStreamingMinBytes, large = 32 * kStreamingMinBytes;
  std::vector<bool> kinds;
  auto work = [&](bool streaming) { kinds.push_back(streaming); };
  const uint64_t perKind = StoreChooser::kTrialBytes / piece;
  for (uint64_t i = 0; i < 2 * perKind; ++i) chooser.run(piece, small, work);
  ASSERT_NE(chooser.mode(small), StoreChooser::Mode::kAuto);
  EXPECT_EQ(chooser.mode(large), StoreChooser::Mode::kAuto);
  EXPECT_EQ(chooser.rate(false, large), 0.0);
  kinds.clear();
  for (uint64_t i = 0; i < 2 * perKind; ++i) chooser.run(piece, large, work);
  ASSERT_EQ(kinds.size(), 2 * perKind);
  for (size_t i = 0; i < kinds.size(); ++i) ASSERT_EQ(kinds[i], i % 2 == 0) << "piece " << i;
  EXPECT_NE(chooser.mode(large), StoreChooser::Mode::kAuto);
  EXPECT_GT(chooser.rate(true, large), 0.0);
}

TEST(StoreChooser, SmallMessagesAndShortCopiesAreNotTimed) {
  const size_t block = size_t{1} << 20;
  const auto src = pattern(block, 3);
  std::vector<unsigned char> dst(block);
  StoreChooser chooser;
  for (int i = 0; i < 100; ++i) chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes - 1);
  for (int i = 0; i < 100; ++i) chooser.copy(dst.data(), src.data(), StoreChooser::kTimedMinBytes - 1, kStreamingMinBytes);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(chooser.mode(), StoreChooser::Mode::kAuto);
  EXPECT_EQ(chooser.rate(true), 0.0);
  EXPECT_EQ(chooser.rate(false), 0.0);
}

TEST(StoreChooser, TheEnvironmentForcesEitherKindAndBadValuesAreClear) {
  unsetenv("CFX_STREAMING_STORES");
  EXPECT_EQ(StoreChooser::modeFromEnv(), StoreChooser::Mode::kAuto);
  setenv("CFX_STREAMING_STORES", "1", 1);
  EXPECT_EQ(StoreChooser::modeFromEnv(), StoreChooser::Mode::kStreaming);
  setenv("CFX_STREAMING_STORES", "0", 1);
  EXPECT_EQ(StoreChooser::modeFromEnv(), StoreChooser::Mode::kOrdinary);
  setenv("CFX_STREAMING_STORES", "yes", 1);
  try {
    StoreChooser::modeFromEnv();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("CFX_STREAMING_STORES"), std::string::npos) << e.what();
  }
  unsetenv("CFX_STREAMING_STORES");
  // A forced chooser never times.
  const size_t block = size_t{1} << 20;
  const auto src = pattern(block, 4);
  std::vector<unsigned char> dst(block);
  for (auto m : {StoreChooser::Mode::kStreaming, StoreChooser::Mode::kOrdinary}) {
    StoreChooser chooser(m);
    for (int i = 0; i < 80; ++i) chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes);
    EXPECT_EQ(dst, src);
    EXPECT_EQ(chooser.mode(), m);
    EXPECT_EQ(chooser.rate(true) + chooser.rate(false), 0.0);
  }
}

}  // namespace
}  // namespace conflux
