// Reduction kernels: the same bits from every instruction set, one rounding for narrow floats,
// wrapping integers, and the fp8/bf16 conversions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce/float_formats.h"
#include "reduce/kernels.h"

namespace conflux::reduce {
namespace {

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

std::string bytesHex(const uint8_t* p, size_t n) {
  std::string s = "0x";
  char buf[4];
  for (size_t k = n; k-- > 0;) {
    std::snprintf(buf, sizeof(buf), "%02x", p[k]);
    s += buf;
  }
  return s;
}

// Every instruction set gives the same bits, NaNs included (narrow formats store canonical NaNs).
TEST(Kernels, EveryIsaGivesTheSameBits) {
  auto tables = tablesOnThisCpu();
  std::string names;
  for (const auto* t : tables) names += std::string(" ") + t->isa;
  std::printf("# kernel tables on this CPU:%s (chosen: %s)\n", names.c_str(), kernels().isa);
  RecordProperty("isas", names);
  std::mt19937_64 rng(42);
  const size_t count = 1037;  // odd: exercises the vector tails
  for (int t = 0; t < cfxNumTypes; ++t) {
    size_t es = dataTypeSize(static_cast<cfxDataType_t>(t));
    for (int op = 0; op < cfxNumOps; ++op) {
      for (int nsrc : {1, 2, 3, 8}) {
        // Random bit patterns (NaNs and infinities included), one element off alignment.
        std::vector<std::vector<uint8_t>> src(nsrc, std::vector<uint8_t>((count + 1) * es));
        for (auto& s : src) {
          for (auto& b : s) b = static_cast<uint8_t>(rng());
        }
        std::vector<const void*> ptrs;
        for (auto& s : src) ptrs.push_back(s.data() + es);
        std::vector<uint8_t> ref((count + 1) * es), out((count + 1) * es);
        tables[0]->fn[t][op](ref.data() + es, ptrs.data(), nsrc, count, nsrc);
        for (size_t k = 1; k < tables.size(); ++k) {
          std::fill(out.begin(), out.end(), 0);
          tables[k]->fn[t][op](out.data() + es, ptrs.data(), nsrc, count, nsrc);
          for (size_t i = 1; i <= count; ++i) {
            const uint8_t* a = ref.data() + i * es;
            const uint8_t* b = out.data() + i * es;
            if (std::memcmp(a, b, es) == 0) continue;
            FAIL() << tables[k]->isa << " differs from generic for " << dataTypeName(static_cast<cfxDataType_t>(t)) << " "
                << redOpName(static_cast<cfxRedOp_t>(op)) << " nsrc " << nsrc << " at element " << i - 1 << ": "
                << bytesHex(a, es) << " (generic) against " << bytesHex(b, es) << ", first input "
                << bytesHex(static_cast<const uint8_t*>(ptrs[0]) + (i - 1) * es, es);
          }
        }
      }
    }
  }
}

// Two sources a[i] and b[i] of type `t` (element type T), every op (Avg by 2, and by 3, which
// keeps the fp32 kernels even where two sources reduce in fp16), on every instruction set against
// the portable kernels.
template <class T>
void expectPairsMatchGeneric(cfxDataType_t t, const std::vector<T>& a, const std::vector<T>& b) {
  auto tables = tablesOnThisCpu();
  const size_t count = a.size();
  const void* ptrs[2] = {a.data(), b.data()};
  for (int op = 0; op < cfxNumOps; ++op) {
    for (int divisor : {2, 3}) {
      if (divisor != 2 && op != cfxAvg) continue;
      std::vector<T> ref(count), out(count);
      tables[0]->fn[t][op](ref.data(), ptrs, 2, count, divisor);
      for (size_t k = 1; k < tables.size(); ++k) {
        std::fill(out.begin(), out.end(), T{0});
        tables[k]->fn[t][op](out.data(), ptrs, 2, count, divisor);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(ref[i], out[i]) << tables[k]->isa << " " << dataTypeName(t) << " "
                                    << redOpName(static_cast<cfxRedOp_t>(op)) << " (divisor " << divisor
                                    << ") of codes 0x" << std::hex << uint32_t{a[i]} << " and 0x" << uint32_t{b[i]};
        }
      }
    }
  }
}

// fp8 has vector kernels of its own (fp8_simd.h, and fp16_native.h for two sources with AVX-512
// FP16): every pair of codes (one pass of 65,536 elements, plus a tail of 5).
TEST(Kernels, Fp8EveryPairOfCodesGivesTheSameBits) {
  const size_t count = 256 * 256 + 5;
  std::vector<uint8_t> a(count), b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<uint8_t>(i >> 8);
    b[i] = static_cast<uint8_t>(i);
  }
  for (cfxDataType_t t : {cfxFloat8e4m3, cfxFloat8e5m2}) expectPairsMatchGeneric(t, a, b);
}

// With AVX-512 FP16, two fp16 sources reduce in fp16 arithmetic (fp16_native.h): every fp16 code
// against a set of others (zeros, subnormals, the ends of the normal range, infinities, NaNs,
// neighbours of 1 and random codes).
TEST(Kernels, HalfEveryCodeAgainstASetGivesTheSameBits) {
  std::vector<uint16_t> others = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x0401, 0x3bff, 0x3c00, 0x3c01,
                                  0x3800, 0x1400, 0x7bff, 0xfbff, 0x7bfe, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01};
  std::mt19937_64 rng(7);
  while (others.size() < 48) others.push_back(static_cast<uint16_t>(rng()));
  const size_t count = 65536 * others.size() + 7;  // a tail under the vector width
  std::vector<uint16_t> a(count), b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = static_cast<uint16_t>(i);
    b[i] = others[(i >> 16) % others.size()];
  }
  expectPairsMatchGeneric(cfxFloat16, a, b);
}

// Avg, element by element as the definition reads: the sources combined in order in the
// accumulator type (integers wrap; narrow floats widen to fp32), divided by `divisor` (integers
// truncate toward zero), stored (narrow floats round once). NaN for a float NaN, whose payload
// the test does not compare.
template <class T, class Load, class Store>
std::vector<T> avgByDivision(const std::vector<std::vector<T>>& srcs, size_t count, int divisor, Load load, Store store) {
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    auto acc = load(srcs[0][i]);
    for (size_t k = 1; k < srcs.size(); ++k) {
      if constexpr (std::is_integral_v<decltype(acc)>) {
        using U = std::make_unsigned_t<decltype(acc)>;
        acc = static_cast<decltype(acc)>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(load(srcs[k][i]))));
      } else {
        acc = acc + load(srcs[k][i]);
      }
    }
    if constexpr (std::is_signed_v<decltype(acc)> && std::is_integral_v<decltype(acc)>) {
      out[i] = store(static_cast<decltype(acc)>(static_cast<int64_t>(acc) / divisor));
    } else if constexpr (std::is_integral_v<decltype(acc)>) {
      out[i] = store(static_cast<decltype(acc)>(static_cast<uint64_t>(acc) / static_cast<uint64_t>(divisor)));
    } else {
      out[i] = store(acc / static_cast<decltype(acc)>(divisor));
    }
  }
  return out;
}

template <class T>
bool sameElement(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  }
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every table's Avg against the division, for divisors that are powers of two (the kernels
// multiply or shift there, kernels_impl.h, Pow2Divisor) and two that are not: random bit patterns
// (NaNs, infinities, subnormals; the extremes of every integer type), 1 to 9 sources (9: the
// blocked kernel), an odd count for the vector tails.
template <class T, class Load, class Store>
void expectAvgIsTheDivision(cfxDataType_t t, Load load, Store store) {
  std::mt19937_64 rng(1234 + t);
  const size_t count = 1031;
  for (int nsrc : {1, 2, 3, 4, 8, 9}) {
    std::vector<std::vector<T>> srcs(nsrc, std::vector<T>(count));
    for (auto& s : srcs) {
      for (auto& v : s) {
        const uint64_t bits = rng();
        std::memcpy(&v, &bits, sizeof(T));
      }
    }
    if constexpr (std::is_integral_v<T>) {
      srcs[0][0] = std::numeric_limits<T>::min();
      srcs[0][1] = std::numeric_limits<T>::max();
      for (int k = 1; k < nsrc; ++k) srcs[k][0] = srcs[k][1] = T{0};
    }
    std::vector<const void*> ptrs;
    for (auto& s : srcs) ptrs.push_back(s.data());
    for (int divisor : {1, 2, 4, 8, 64, 128, 256, 1024, 65536, 1 << 30, 3, 6}) {
      const std::vector<T> want = avgByDivision(srcs, count, divisor, load, store);
      for (const KernelTable* table : tablesOnThisCpu()) {
        std::vector<T> out(count);
        table->fn[t][cfxAvg](out.data(), ptrs.data(), nsrc, count, divisor);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(sameElement(want[i], out[i]))
              << table->isa << " " << dataTypeName(t) << " avg of " << nsrc << " sources by " << divisor
              << " at element " << i << ": " << bytesHex(reinterpret_cast<const uint8_t*>(&out[i]), sizeof(T))
              << " against the division's " << bytesHex(reinterpret_cast<const uint8_t*>(&want[i]), sizeof(T));
        }
      }
    }
  }
}

TEST(Kernels, AvgIsTheDivisionOnEveryTable) {
  const auto same = [](auto v) { return v; };
  expectAvgIsTheDivision<int8_t>(cfxInt8, same, same);
  expectAvgIsTheDivision<uint8_t>(cfxUint8, same, same);
  expectAvgIsTheDivision<int32_t>(cfxInt32, same, same);
  expectAvgIsTheDivision<uint32_t>(cfxUint32, same, same);
  expectAvgIsTheDivision<int64_t>(cfxInt64, same, same);
  expectAvgIsTheDivision<uint64_t>(cfxUint64, same, same);
  expectAvgIsTheDivision<float>(cfxFloat32, same, same);
  expectAvgIsTheDivision<double>(cfxFloat64, same, same);
  expectAvgIsTheDivision<uint16_t>(cfxFloat16, halfBitsToFloat, floatToHalfBits);
  expectAvgIsTheDivision<uint16_t>(cfxBfloat16, bf16ToFloat, floatToBf16);
  expectAvgIsTheDivision<uint8_t>(cfxFloat8e4m3, [](uint8_t c) { return fp8Decode(c, kE4M3); },
                                  [](float f) { return fp8Encode(f, kE4M3); });
  expectAvgIsTheDivision<uint8_t>(cfxFloat8e5m2, [](uint8_t c) { return fp8Decode(c, kE5M2); },
                                  [](float f) { return fp8Encode(f, kE5M2); });
}

template <class T>
std::vector<T> run(cfxDataType_t t, cfxRedOp_t op, std::vector<T> inputs) {
  std::vector<const void*> ptrs;
  for (auto& v : inputs) ptrs.push_back(&v);
  std::vector<T> out(1);
  reduce(out.data(), ptrs.data(), static_cast<int>(inputs.size()), 1, t, op, static_cast<int>(inputs.size()));
  return out;
}

TEST(Kernels, NarrowFloatsRoundOnce) {
  // 1 + 2^-8 + 2^-8: rounding after each add would tie back to 1 twice; fp32 accumulation gives
  // 1 + 2^-7, which bf16 holds exactly.
  auto bf = [](float f) { return floatToBf16(f); };
  EXPECT_EQ(run<uint16_t>(cfxBfloat16, cfxSum, {bf(1.0f), bf(0x1p-8f), bf(0x1p-8f)})[0], bf(1.0f + 0x1p-7f));
  _Float16 h1 = 1.0f, hs = 0x1p-11f;
  EXPECT_EQ(static_cast<float>(run<_Float16>(cfxFloat16, cfxSum, {h1, hs, hs})[0]), 1.0f + 0x1p-10f);
  // E4M3: 1 + 1/16 + 1/16 = 1.125 (0x39); per-step rounding would give 1.0 (0x38).
  uint8_t one = fp8Encode(1.0f, kE4M3), sixteenth = fp8Encode(0.0625f, kE4M3);
  EXPECT_EQ(run<uint8_t>(cfxFloat8e4m3, cfxSum, {one, sixteenth, sixteenth})[0], 0x39);
}

TEST(Kernels, IntegersWrapAndAvgTruncates) {
  EXPECT_EQ(run<int8_t>(cfxInt8, cfxSum, {127, 1})[0], -128);
  EXPECT_EQ(run<int8_t>(cfxInt8, cfxProd, {16, 16})[0], 0);
  EXPECT_EQ(run<int32_t>(cfxInt32, cfxAvg, {-7, 0})[0], -3);
  EXPECT_EQ(run<uint8_t>(cfxUint8, cfxAvg, {255, 1})[0], 0);  // the sum wraps before the division
  EXPECT_EQ(run<uint64_t>(cfxUint64, cfxMax, {~0ull, 1})[0], ~0ull);
  EXPECT_EQ(run<int64_t>(cfxInt64, cfxMin, {-5, 3, -9})[0], -9);
}

TEST(Kernels, SourceOrderIsFixed) {
  // (1e20 + 1) - 1e20 = 0 in fp32, in this order; any other order could give 1.
  EXPECT_EQ(run<float>(cfxFloat32, cfxSum, {1e20f, 1.0f, -1e20f})[0], 0.0f);
  EXPECT_EQ(run<float>(cfxFloat32, cfxSum, {1e20f, -1e20f, 1.0f})[0], 1.0f);
  EXPECT_EQ(run<double>(cfxFloat64, cfxAvg, {1.0, 2.0, 4.0})[0], 7.0 / 3.0);
}

TEST(FloatFormats, Fp8RoundTripsEveryCode) {
  for (const Fp8Format* f : {&kE4M3, &kE5M2}) {
    for (int c = 0; c < 256; ++c) {
      float v = fp8Decode(static_cast<uint8_t>(c), *f);
      if (std::isnan(v) || std::isinf(v)) continue;
      EXPECT_EQ(fp8Encode(v, *f), c) << "code " << c << " value " << v;
    }
  }
}

// The fast branchless conversions against the reference definitions: every fp8 code, and floats
// around every fp8 value and rounding midpoint, plus a sweep of random bit patterns.
TEST(FloatFormats, FastFp8ConversionsMatchTheReference) {
  std::mt19937 rng(7);
  for (const Fp8Format* f : {&kE4M3, &kE5M2}) {
    for (int c = 0; c < 256; ++c) {
      float ref = fp8Decode(static_cast<uint8_t>(c), *f), fast = fp8ToFloat(static_cast<uint8_t>(c), *f);
      if (std::isnan(ref)) {
        EXPECT_TRUE(std::isnan(fast)) << c;
      } else {
        EXPECT_EQ(floatBits(ref), floatBits(fast)) << "code " << c;
      }
      for (float probe : {ref, std::nextafter(ref, INFINITY), std::nextafter(ref, -INFINITY),
                          (ref + fp8Decode(static_cast<uint8_t>(c + 1), *f)) / 2}) {
        if (std::isnan(probe)) continue;
        ASSERT_EQ(fp8Encode(probe, *f), fp8EncodeReference(probe, *f)) << "value " << probe;
      }
    }
    for (int i = 0; i < 2000000; ++i) {
      float x = bitsFloat(static_cast<uint32_t>(rng()));
      if (std::isnan(x)) continue;
      ASSERT_EQ(fp8Encode(x, *f), fp8EncodeReference(x, *f)) << "value " << x;
    }
  }
}

TEST(FloatFormats, FastHalfConversionsMatchTheCompiler) {
  for (uint32_t h = 0; h < 65536; ++h) {
    _Float16 v;
    uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&v, &bits, 2);
    float ref = static_cast<float>(v);
    if (std::isnan(ref)) {
      EXPECT_TRUE(std::isnan(halfBitsToFloat(bits)));
      continue;
    }
    ASSERT_EQ(floatBits(ref), floatBits(halfBitsToFloat(bits))) << "half 0x" << std::hex << h;
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 4000000; ++i) {
    float x = bitsFloat(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) continue;
    _Float16 want = static_cast<_Float16>(x);
    uint16_t wantBits;
    std::memcpy(&wantBits, &want, 2);
    ASSERT_EQ(floatToHalfBits(x), wantBits) << "value " << x;
  }
}

TEST(FloatFormats, Fp8RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(fp8Encode(1.0625f, kE4M3), 0x38);   // tie between 1 and 1.125: even (1)
  EXPECT_EQ(fp8Encode(1.1875f, kE4M3), 0x3a);   // tie between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(fp8Encode(1000.0f, kE4M3), 0x7e);   // saturates to 448
  EXPECT_EQ(fp8Encode(-1000.0f, kE4M3), 0xfe);
  EXPECT_EQ(fp8Encode(INFINITY, kE5M2), 0x7b);  // saturates to 57344
  EXPECT_EQ(fp8Encode(NAN, kE4M3), 0x7f);
  EXPECT_TRUE(std::isnan(fp8Decode(fp8Encode(NAN, kE5M2), kE5M2)));
  EXPECT_EQ(fp8Decode(0x7e, kE4M3), 448.0f);
  EXPECT_EQ(fp8Decode(0x7b, kE5M2), 57344.0f);
  EXPECT_EQ(fp8Decode(0x01, kE4M3), 0x1p-9f);   // smallest subnormal
  EXPECT_EQ(fp8Encode(0x1p-10f, kE4M3), 0x00);  // half the smallest subnormal: tie to even (0)
  EXPECT_EQ(fp8Encode(0x1.8p-9f, kE4M3), 0x02); // 1.5 subnormal steps: tie to even (2)
}

TEST(FloatFormats, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), floatToBf16(1.0f));                 // tie: even
  EXPECT_EQ(floatToBf16(1.0f + 0x1.8p-8f), floatToBf16(1.0f + 0x1p-7f));     // above the tie: up
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-7f + 0x1p-8f), floatToBf16(1.0f + 0x1p-6f));  // tie: even (up)
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
}

}  // namespace
}  // namespace conflux::reduce
