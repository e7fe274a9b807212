// reduce::reduceStreamed (comm/src/reduce/stream_out.h): the bits of reduce() into one output, in
// every output, for every datatype and op, at every alignment it accepts; nothing written outside
// the outputs, and nothing at all when the outputs' alignments differ. And reduce::streamLines
// (comm/src/reduce/stream_lines.h), each of its two ways, from sources at every offset.
#include <gtest/gtest.h>

#include <emmintrin.h>

#include <cstring>
#include <iostream>
#include <utility>
#include <random>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/stream_lines.h"
#include "reduce/stream_out.h"

namespace conflux::reduce {
namespace {

constexpr size_t kGuard = 64;

TEST(ReduceStreamed, EveryOutputHoldsReduceBitsAtEveryAlignment) {
  std::mt19937_64 rng(7);
  const cfxRedOp_t ops[] = {cfxSum, cfxProd, cfxMax, cfxMin, cfxAvg, cfxSumExact, cfxAvgExact};
  // Shorter than a line, a few lines, and several tiles with a ragged tail.
  const size_t counts[] = {0, 1, 5, 40, 333, 3 * kStreamTileBytes + 17};
  for (int t = 0; t < cfxNumTypes; ++t) {
    const auto type = static_cast<cfxDataType_t>(t);
    const size_t es = dataTypeSize(type);
    for (cfxRedOp_t op : ops) {
      for (int nsrc : {1, 2, 3}) {
        for (int ndst : {1, 2, 3}) {
          for (size_t offset : {size_t{0}, es, 32 - 32 % es, 64 - es}) {
            for (size_t count : counts) {
              const size_t bytes = count * es;
              std::vector<std::vector<uint8_t>> src(nsrc, std::vector<uint8_t>(bytes + 1));
              std::vector<const void*> srcs;
              for (auto& s : src) {
                for (auto& b : s) b = static_cast<uint8_t>(rng());
                srcs.push_back(s.data());
              }
              std::vector<uint8_t> ref(bytes + 1);
              reduce(ref.data(), srcs.data(), nsrc, count, type, op, nsrc);
              // Each output line-aligned plus `offset`, between guard bytes.
              std::vector<std::vector<uint8_t>> out(ndst, std::vector<uint8_t>(bytes + 3 * kGuard, 0xA5));
              std::vector<void*> dsts;
              for (auto& o : out) {
                auto base = reinterpret_cast<uintptr_t>(o.data() + kGuard);
                dsts.push_back(reinterpret_cast<void*>((base & ~uintptr_t{63}) + offset));
              }
              ASSERT_TRUE(reduceStreamed(dsts.data(), ndst, srcs.data(), nsrc, count, type, op, nsrc));
              for (int d = 0; d < ndst; ++d) {
                auto* p = static_cast<uint8_t*>(dsts[d]);
                ASSERT_EQ(std::memcmp(p, ref.data(), bytes), 0)
                    << dataTypeName(type) << " " << redOpName(op) << " nsrc " << nsrc << " output " << d << " of "
                    << ndst << " offset " << offset << " count " << count;
                for (uint8_t* g = out[d].data(); g < p; ++g) ASSERT_EQ(*g, 0xA5) << "written before output " << d;
                for (uint8_t* g = p + bytes; g < out[d].data() + out[d].size(); ++g) {
                  ASSERT_EQ(*g, 0xA5) << "written after output " << d;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(ReduceStreamed, OutputsAtDifferentOffsetsInALineAreLeftAlone) {
  std::vector<float> a(100, 1.0f), b(100, 2.0f);
  alignas(64) float o1[128], o2[128];
  std::fill(std::begin(o1), std::end(o1), -1.0f);
  std::fill(std::begin(o2), std::end(o2), -1.0f);
  const void* srcs[] = {a.data(), b.data()};
  void* dsts[] = {o1, o2 + 1};  // 0 and 4 bytes into a line
  EXPECT_FALSE(reduceStreamed(dsts, 2, srcs, 2, 100, cfxFloat32, cfxSum, 2));
  void* odd[] = {reinterpret_cast<uint8_t*>(o1) + 2};  // fp32 two bytes into a line
  EXPECT_FALSE(reduceStreamed(odd, 1, srcs, 2, 100, cfxFloat32, cfxSum, 2));
  for (float v : o1) EXPECT_EQ(v, -1.0f);
  for (float v : o2) EXPECT_EQ(v, -1.0f);
  void* same[] = {o1 + 1, o2 + 1};
  ASSERT_TRUE(reduceStreamed(same, 2, srcs, 2, 100, cfxFloat32, cfxSum, 2));
  EXPECT_EQ(o1[0], -1.0f);
  EXPECT_EQ(o1[1], 3.0f);
  EXPECT_EQ(o2[100], 3.0f);
  EXPECT_EQ(o2[101], -1.0f);
}

TEST(StreamLines, BothWaysCopyWholeLinesFromAnySourceOffset) {
  using Way = void (*)(void*, const void*, size_t);
  std::vector<std::pair<const char*, Way>> ways = {{"narrow", streamLinesNarrow}, {"dispatched", streamLines}};
  if (streamLinesWideOk()) ways.emplace_back("wide (AVX-512)", streamLinesWide);
  std::cout << "[ INFO     ] streamLines here: " << (streamLinesWideOk() ? "wide (AVX-512F)" : "narrow (16-byte stores)")
            << "\n";
  std::mt19937_64 rng(11);
  std::vector<uint8_t> src(64 * 40 + 64);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  for (const auto& [name, way] : ways) {
    for (size_t lines : {0, 1, 2, 7, 40}) {
      for (size_t srcOff : {0, 1, 16, 63}) {
        alignas(64) uint8_t out[64 * 42];
        std::memset(out, 0xA5, sizeof out);
        way(out + 64, src.data() + srcOff, lines * 64);
        _mm_sfence();
        ASSERT_EQ(std::memcmp(out + 64, src.data() + srcOff, lines * 64), 0) << name << " " << lines << " lines";
        for (size_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], 0xA5) << name << ": written before the output";
        for (size_t i = 64 + lines * 64; i < sizeof out; ++i) ASSERT_EQ(out[i], 0xA5) << name << ": written after";
      }
    }
  }
}

}  // namespace
}  // namespace conflux::reduce
