// Copies into user buffers (comm/src/ops/copy.h): both kinds of stores copy every byte and nothing
// else, and a rank's chooser times both (whole messages for copies, pieces for other work) before
// it keeps the faster one, in each size class of messages.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(StoreChooser, OneSampleOfEachDecidesOnlyAcrossTheDecisiveMargin) {
  using M = StoreChooser::Mode;
  const uint64_t enough = StoreChooser::kTrialBytes, few = enough - 1;
  const double m = StoreChooser::kDecisiveMargin;
  static_assert(StoreChooser::kTrialSamples == 2, "the cases below take two samples as the full trial");
  // Nothing yet, or one kind only.
  EXPECT_EQ(StoreChooser::decide({}, {}, 0, 0), M::kAuto);
  EXPECT_EQ(StoreChooser::decide({1.0}, {}, enough, 0), M::kAuto);
  EXPECT_EQ(StoreChooser::decide({}, {5.0}, 0, enough), M::kAuto);
  // One sample each: decided only when one kind is kDecisiveMargin times the other, either way.
  EXPECT_EQ(StoreChooser::decide({1.0}, {m}, enough, enough), M::kStreaming);
  EXPECT_EQ(StoreChooser::decide({m}, {1.0}, enough, enough), M::kOrdinary);
  EXPECT_EQ(StoreChooser::decide({1.0}, {0.99 * m}, enough, enough), M::kAuto);
  EXPECT_EQ(StoreChooser::decide({0.99 * m}, {1.0}, enough, enough), M::kAuto);
  EXPECT_EQ(StoreChooser::decide({1.0}, {1.0}, enough, enough), M::kAuto);
  // ... and only with kTrialBytes of each.
  EXPECT_EQ(StoreChooser::decide({1.0}, {2 * m}, enough, few), M::kAuto);
  EXPECT_EQ(StoreChooser::decide({2 * m}, {1.0}, few, enough), M::kAuto);
  // The full trial decides at any gap: streaming stores need kStreamingMargin.
  const double s = StoreChooser::kStreamingMargin;
  EXPECT_EQ(StoreChooser::decide({1.0, 1.0}, {s, s}, enough, enough), M::kStreaming);
  EXPECT_EQ(StoreChooser::decide({1.0, 1.0}, {0.99 * s, 0.99 * s}, enough, enough), M::kOrdinary);
  EXPECT_EQ(StoreChooser::decide({1.0, 1.0}, {1.0}, enough, enough), M::kAuto) << "one streaming sample, no gap";
  EXPECT_EQ(StoreChooser::decide({1.0, 1.0}, {1.0, 1.0}, few, enough), M::kAuto);
}

TEST(StoreChooser, TimesWholeMessagesOfBothKindsThenKeepsTheFaster) {
  // Messages of 32 MiB copied in 1 MiB pieces: one untimed message, then the kinds alternate
  // message by message; a message is counted when the next one starts, and the class decides as
  // decide() says: once one message of each is counted if they are far apart, else once each
  // kind has kTrialSamples messages and kTrialBytes.
  const size_t piece = size_t{1} << 20, message = 4 * kStreamingMinBytes;
  const auto src = pattern(piece, 2);
  std::vector<unsigned char> dst(piece);
  StoreChooser chooser;
  const uint64_t perKind = std::max<uint64_t>(StoreChooser::kTrialSamples, StoreChooser::kTrialBytes / message);
  uint64_t id = 1;
  for (; chooser.mode(message) == StoreChooser::Mode::kAuto && id <= 2 + 2 * perKind; ++id) {
    for (size_t p = 0; p < message / piece; ++p) {
      std::memset(dst.data(), 0, piece);
      chooser.copy(dst.data(), src.data(), piece, message, id);
      ASSERT_EQ(dst, src);
      if (p == 0) {
        // Message id's first copy counted message id - 1 (the untimed first message: none).
        const uint64_t counted = id < 3 ? 0 : id - 2;
        const bool decided = chooser.mode(message) != StoreChooser::Mode::kAuto;
        ASSERT_EQ(decided, counted == 2 * perKind || (counted == 2 && decided)) << "message " << id;
        if (decided) break;
      }
    }
  }
  ASSERT_NE(chooser.mode(message), StoreChooser::Mode::kAuto);
  EXPECT_GT(chooser.rate(true, message), 0.0);
  EXPECT_GT(chooser.rate(false, message), 0.0);
  const bool streamingFaster =
      chooser.rate(true, message) >= StoreChooser::kStreamingMargin * chooser.rate(false, message);
  EXPECT_EQ(chooser.mode(message), streamingFaster ? StoreChooser::Mode::kStreaming : StoreChooser::Mode::kOrdinary);
  // Decided: no more timing, the choice stays.
  const double before = chooser.rate(true, message);
  const auto mode = chooser.mode(message);
  for (int m = 0; m < 4; ++m) {
    std::memset(dst.data(), 0, piece);
    chooser.copy(dst.data(), src.data(), piece, message, ++id);
    EXPECT_EQ(dst, src);
  }
  EXPECT_EQ(chooser.rate(true, message), before);
  EXPECT_EQ(chooser.mode(message), mode);
}

TEST(StoreChooser, MessagesUnder32MiBAreTimedByThePiece) {
  // 8-32 MiB: the kinds alternate piece by piece, and the class decides once each kind copied
  // kTrialBytes, whatever the messages.
  const size_t block = size_t{1} << 20;
  const auto src = pattern(block, 2);
  std::vector<unsigned char> dst(block);
  StoreChooser chooser;
  const uint64_t copiesPerKind = StoreChooser::kTrialBytes / block;
  for (uint64_t i = 0; i + 1 < 2 * copiesPerKind; ++i) {
    std::memset(dst.data(), 0, block);
    chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes, 1);
    ASSERT_EQ(dst, src);
    ASSERT_EQ(chooser.mode(), StoreChooser::Mode::kAuto) << "decided after " << i + 1 << " copies";
  }
  chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes, 1);  // the last copy of the trial
  ASSERT_NE(chooser.mode(), StoreChooser::Mode::kAuto);
  const bool streamingFaster = chooser.rate(true) >= StoreChooser::kStreamingMargin * chooser.rate(false);
  EXPECT_EQ(chooser.mode(), streamingFaster ? StoreChooser::Mode::kStreaming : StoreChooser::Mode::kOrdinary);
  EXPECT_EQ(chooser.mode(4 * kStreamingMinBytes), StoreChooser::Mode::kAuto) << "another class decided too";
}

TEST(StoreChooser, AnOlderMessageCopyingMeanwhileSpoilsNoSample) {
  // Two operations progressing together (a group): the newer one's message is not a sample.
  const size_t piece = size_t{1} << 20, message = 4 * kStreamingMinBytes;
  const auto src = pattern(piece, 6);
  std::vector<unsigned char> dst(piece);
  StoreChooser chooser;
  for (uint64_t id = 1; id < 100; ++id) {
    chooser.copy(dst.data(), src.data(), piece, message, 2 * id);
    chooser.copy(dst.data(), src.data(), piece, message, 2 * id - 1);  // older, interleaved
    EXPECT_EQ(dst, src);
  }
  EXPECT_EQ(chooser.mode(message), StoreChooser::Mode::kAuto);
  EXPECT_EQ(chooser.rate(true, message) + chooser.rate(false, message), 0.0);
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

TEST(StoreChooser, SmallMessagesAreNotTimed) {
  const size_t block = size_t{1} << 20;
  const auto src = pattern(block, 3);
  std::vector<unsigned char> dst(block);
  StoreChooser chooser;
  for (uint64_t i = 1; i <= 100; ++i) chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes - 1, i);
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
    for (uint64_t i = 1; i <= 80; ++i) chooser.copy(dst.data(), src.data(), block, kStreamingMinBytes, i);
    EXPECT_EQ(dst, src);
    EXPECT_EQ(chooser.mode(), m);
    EXPECT_EQ(chooser.rate(true) + chooser.rate(false), 0.0);
  }
}

}  // namespace
}  // namespace conflux
