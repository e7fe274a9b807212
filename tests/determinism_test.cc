// Random floats: every rank gets bitwise the same AllReduce result, equal to summing the ranks'
// inputs in rank order, and a second run gives the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

std::vector<float> randomFloats(int rank, size_t count) {
  std::mt19937 rng(1234 + rank);
  std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = u(rng);
  return v;
}

uint16_t toBf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

class DeterminismTest : public ::testing::TestWithParam<int> {};

TEST_P(DeterminismTest, RandomFloatsAreBitwiseIdentical) {
  runRanks(GetParam(), [](Rank& rk) {
    const size_t count = (1 << 20) + 3;
    const int n = rk.nranks;
    // fp32: the reference sums inputs in rank order, in fp32.
    std::vector<float> mine = randomFloats(rk.rank, count), r1(count), r2(count), ref(count, 0.0f);
    CFX_ASSERT_OK(cfxAllReduce(mine.data(), r1.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
    CFX_ASSERT_OK(cfxAllReduce(mine.data(), r2.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
    ASSERT_EQ(0, std::memcmp(r1.data(), r2.data(), count * 4)) << "second run differs";
    ref = randomFloats(0, count);
    for (int r = 1; r < n; ++r) {
      auto in = randomFloats(r, count);
      for (size_t i = 0; i < count; ++i) ref[i] += in[i];
    }
    ASSERT_EQ(0, std::memcmp(r1.data(), ref.data(), count * 4)) << "not the rank-order fp32 sum";

    // bf16: accumulate in fp32 in rank order, round once.
    std::vector<uint16_t> b(count), bout(count);
    for (size_t i = 0; i < count; ++i) b[i] = toBf16(mine[i]);
    CFX_ASSERT_OK(cfxAllReduce(b.data(), bout.data(), count, cfxBfloat16, cfxSum, rk.comm, nullptr));
    std::vector<float> acc(count, 0.0f);
    for (int r = 0; r < n; ++r) {
      auto in = randomFloats(r, count);
      for (size_t i = 0; i < count; ++i) acc[i] = r == 0 ? fromBf16(toBf16(in[i])) : acc[i] + fromBf16(toBf16(in[i]));
    }
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(bout[i], toBf16(acc[i])) << "element " << i;

    // Every rank holds the same bits: gather everyone's first 4096 results and compare.
    std::vector<float> all(4096 * n);
    CFX_ASSERT_OK(cfxAllGather(r1.data(), all.data(), 4096, cfxFloat32, rk.comm, nullptr));
    for (int r = 1; r < n; ++r) ASSERT_EQ(0, std::memcmp(all.data(), all.data() + r * 4096, 4096 * 4));
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeterminismTest, ::testing::Values(2, 3, 8));

}  // namespace
}  // namespace cfxtest
