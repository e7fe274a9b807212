// The exact kernels (comm/src/reduce/exact_sum.h) against the independent reference
// (exact_reference.h): every floating-point datatype, Sum and Avg, 1 to 8 sources and a blocked
// 13, on inputs built to hurt, on every instruction set this CPU runs; and in place.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "exact_reference.h"
#include "reduce/kernels.h"

namespace conflux::reduce {
namespace {

using cfxtest::elementSize;
using cfxtest::exactReference;
using cfxtest::hurtfulInput;

std::vector<const KernelTable*> tablesOnThisCpu() {
  std::vector<const KernelTable*> t = {&kernelsGeneric()};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
    t.push_back(&kernelsAvx2());
  }
  if (cpuHasAvx512()) t.push_back(&kernelsAvx512());
  if (cpuHasAvx512Bf16()) t.push_back(&kernelsAvx512Bf16());
  if (cpuHasAvx512Fp16()) t.push_back(&kernelsAvx512Fp16());
  return t;
}

constexpr cfxDataType_t kFloatTypes[] = {cfxFloat64, cfxFloat32, cfxFloat16, cfxBfloat16, cfxFloat8e4m3, cfxFloat8e5m2};

uint64_t load(const std::vector<uint8_t>& buf, size_t es, size_t i) {
  uint64_t v = 0;
  std::memcpy(&v, buf.data() + i * es, es);
  return v;
}

void store(std::vector<uint8_t>& buf, size_t es, size_t i, uint64_t v) { std::memcpy(buf.data() + i * es, &v, es); }

// Runs one table's exact kernel over `n` sources of `count` hurtful elements; "" or the first miss.
std::string check(const KernelTable& table, cfxDataType_t type, int n, bool avg, size_t count, bool inPlace) {
  const size_t es = elementSize(type);
  std::vector<std::vector<uint8_t>> in(n, std::vector<uint8_t>(count * es));
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) store(in[r], es, i, hurtfulInput(type, n, r, i));
  }
  std::vector<uint8_t> out(count * es);
  std::vector<std::vector<uint8_t>> keep = in;
  std::vector<const void*> srcs(n);
  for (int r = 0; r < n; ++r) srcs[r] = in[r].data();
  void* dst = inPlace ? in[0].data() : out.data();
  table.exact[type][avg ? 1 : 0](dst, srcs.data(), n, count, n);
  const std::vector<uint8_t>& got = inPlace ? in[0] : out;
  for (size_t i = 0; i < count; ++i) {
    std::vector<uint64_t> xs(n);
    for (int r = 0; r < n; ++r) xs[r] = load(keep[r], es, i);
    const uint64_t want = exactReference(type, xs, avg);
    if (load(got, es, i) != want) {
      std::string s = std::string(table.isa) + " " + dataTypeName(type) + (avg ? " avg" : " sum") + " n=" +
                      std::to_string(n) + " element " + std::to_string(i) + " (pattern " + std::to_string(i % 16) +
                      "): got " + std::to_string(load(got, es, i)) + ", want " + std::to_string(want) + "; inputs";
      for (uint64_t x : xs) s += " " + std::to_string(x);
      return s;
    }
  }
  return "";
}

TEST(ExactKernels, CorrectlyRoundedOnInputsBuiltToHurt) {
  for (const KernelTable* table : tablesOnThisCpu()) {
    for (cfxDataType_t type : kFloatTypes) {
      for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
        for (bool avg : {false, true}) ASSERT_EQ(check(*table, type, n, avg, 700, false), "");
      }
    }
  }
}

TEST(ExactKernels, InPlace) {
  for (cfxDataType_t type : kFloatTypes) {
    for (bool avg : {false, true}) ASSERT_EQ(check(kernels(), type, 4, avg, 517, true), "");
  }
}

// Cases worked by hand, so the reference itself is checked too.
TEST(ExactKernels, HandWorkedCases) {
  auto sum = [](std::vector<double> xs, bool avg = false) {
    double out = 0;
    std::vector<const void*> srcs;
    for (double& x : xs) srcs.push_back(&x);
    kernels().exact[cfxFloat64][avg ? 1 : 0](&out, srcs.data(), static_cast<int>(xs.size()), 1,
                                             static_cast<int>(xs.size()));
    return out;
  };
  EXPECT_EQ(sum({1e30, 1.0, -1e30}), 1.0);         // plain double gives 0
  EXPECT_EQ(sum({1.0, 0x1p-53}), 1.0);              // a tie: to even
  EXPECT_EQ(sum({1.0, 0x1p-53, 0x1p-1074}), 1.0 + 0x1p-52);  // past the tie
  EXPECT_EQ(sum({0x1p1023, 0x1p1023, -0x1p1023}), 0x1p1023);  // no overflow in between
  EXPECT_TRUE(std::signbit(sum({-0.0, -0.0})));
  EXPECT_FALSE(std::signbit(sum({-0.0, 0.0})));
  EXPECT_EQ(sum({0x1p-1074, 0x1p-1074, 0x1p-1074}, true), 0x1p-1074);  // 3 * tiny / 3
  EXPECT_EQ(sum({0x1p-1074, 0.0}, true), 0.0);                          // a tie at zero: to even
  const double third = sum({1.0, 0.0, 0.0}, true);
  EXPECT_EQ(third, 1.0 / 3.0);
  auto ref = [](std::vector<double> xs, bool avg = false) {
    std::vector<uint64_t> bits;
    for (double x : xs) {
      uint64_t b;
      std::memcpy(&b, &x, 8);
      bits.push_back(b);
    }
    const uint64_t r = exactReference(cfxFloat64, bits, avg);
    double d;
    std::memcpy(&d, &r, 8);
    return d;
  };
  EXPECT_EQ(ref({1e30, 1.0, -1e30}), 1.0);
  EXPECT_EQ(ref({1.0, 0x1p-53}), 1.0);
  EXPECT_EQ(ref({1.0, 0x1p-53, 0x1p-1074}), 1.0 + 0x1p-52);
  EXPECT_EQ(ref({1.0, 0.0, 0.0}, true), 1.0 / 3.0);
  EXPECT_EQ(ref({0x1p1023, 0x1p1023}), HUGE_VAL);
}

}  // namespace
}  // namespace conflux::reduce
