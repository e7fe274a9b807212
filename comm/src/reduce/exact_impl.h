// The exact kernels' fast path (exact_sum.h), included by kernels_impl.h once per instruction set.
// Internal linkage, as there.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "reduce/exact_sum.h"
#include "reduce/kernels.h"
#include "reduce/float_formats.h"

namespace conflux::reduce {
namespace {

// Per floating-point datatype: the type the fast path sums in (Acc; every element converts to it
// exactly), and how an exact Acc (Sum) or an exact sum divided (Avg) becomes the element, rounded once.
// storeScaled: Avg by a power of two 2^k, given 2^-k. The sum is a double, or a float widened, so
// its quotient by 2^k (k <= 30) is exact in double: the product is that quotient, which is what
// quotientToOdd returns for an exact quotient (and what the IEEE division rounds for double),
// with no division (float avg_exact of two L2-resident sources 3.3 -> 5.5 GB/s on the Intel Xeon VM).
struct ExactF64 {
  using Store = double;
  using Acc = double;
  static constexpr const ExactFormat& kFormat = kExactF64;
  static double load(double v) { return v; }
  static double store(double exact) { return exact; }
  static double storeAvg(double s, double divisor) { return s / divisor; }  // IEEE: correctly rounded
  static double storeScaled(double s, double reciprocal) { return s * reciprocal; }
};
struct ExactF32 {
  using Store = float;
  using Acc = double;
  static constexpr const ExactFormat& kFormat = kExactF32;
  static double load(float v) { return v; }
  static float store(double exact) { return static_cast<float>(exact); }
  static float storeAvg(double s, double divisor) { return static_cast<float>(quotientToOdd(s, divisor)); }
  static float storeScaled(double s, double reciprocal) { return static_cast<float>(s * reciprocal); }
};
// The narrow formats sum in float (twice the lanes of double; an exact float sum is rounded once by
// the format's own conversion). Avg: the quotient through double and float by round-to-odd.
template <class Narrow>
struct ExactNarrow {
  using Store = typename Narrow::Store;
  using Acc = float;
  static constexpr const ExactFormat& kFormat = Narrow::kFormat;
  static float load(Store v) { return Narrow::toFloat(v); }
  static Store store(float exact) { return Narrow::fromFloat(exact); }
  static Store storeAvg(float s, double divisor) {
    return Narrow::fromFloat(roundOddToFloat(quotientToOdd(s, divisor)));
  }
  static Store storeScaled(float s, double reciprocal) { return Narrow::fromFloat(roundOddToFloat(s * reciprocal)); }
};
struct NarrowF16 {
  using Store = uint16_t;
  static constexpr const ExactFormat& kFormat = kExactF16;
  static float toFloat(uint16_t v) { return halfBitsToFloat(v); }
  static uint16_t fromFloat(float f) { return floatToHalfBits(f); }
};
struct NarrowBf16 {
  using Store = uint16_t;
  static constexpr const ExactFormat& kFormat = kExactBf16;
  static float toFloat(uint16_t v) { return bf16ToFloat(v); }
  static uint16_t fromFloat(float f) { return floatToBf16(f); }
};
template <bool E4M3>
struct NarrowFp8 {
  using Store = uint8_t;
  static constexpr const ExactFormat& kFormat = E4M3 ? kExactE4M3 : kExactE5M2;
  static float toFloat(uint8_t v) { return fp8ToFloat(v, E4M3 ? kE4M3 : kE5M2); }
  static uint8_t fromFloat(float f) { return fp8Encode(f, E4M3 ? kE4M3 : kE5M2); }
};

// One source into the block's sums, flagging the elements whose addition rounded (TwoSum's error is
// not zero). Not inlined: inlined, GCC's unroll-and-jam fused two sources into one scalar loop from
// 4 sources up (the exact bf16 kernel ran at a third of its 2-source speed).
template <class Tr, class A, class Flag>
__attribute__((noinline)) void addSource(A* __restrict sum, Flag* __restrict inexact,
                                         const typename Tr::Store* __restrict sk, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const A a = sum[i], b = Tr::load(sk[i]);
    const A t = a + b;
    const A bv = t - a;
    const A err = (a - (t - bv)) + (b - bv);
    inexact[i] |= err != 0 ? 1 : 0;
    sum[i] = t;
  }
}

// Blocks of elements: sum every source in double in source order, flagging an element when an
// addition rounded (TwoSum's error is not zero: NaN for infinities and NaNs, so those are flagged
// too); take the flagged ones from exactSum, the others from the double. The output may be one of
// the sources (a block is read whole before it is written).
template <class Tr, bool Avg, bool Pow2>
void exactKernel(void* dstv, const void* const* srcs, int nsrc, size_t count, int divisor) {
  using S = typename Tr::Store;
  using A = typename Tr::Acc;
  using Flag = std::conditional_t<sizeof(A) == 8, int64_t, int32_t>;  // lane width of A: vectorises
  constexpr size_t kBlock = 512;
  A sum[kBlock];
  Flag inexact[kBlock];
  S out[kBlock];
  std::vector<double> xs(static_cast<size_t>(nsrc));
  auto* dst = static_cast<S*>(dstv);
  const double reciprocal = 1.0 / divisor;  // exact where Pow2
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = count - base < kBlock ? count - base : kBlock;
    const S* s0 = static_cast<const S*>(srcs[0]) + base;
    for (size_t i = 0; i < n; ++i) {
      sum[i] = Tr::load(s0[i]);
      inexact[i] = 0;
    }
    for (int k = 1; k < nsrc; ++k) addSource<Tr, A, Flag>(sum, inexact, static_cast<const S*>(srcs[k]) + base, n);
    // Every element from its double (a loop without branches, so it vectorises), then the flagged
    // ones again from exactSum (rare in real data).
    Flag any = 0;
    for (size_t i = 0; i < n; ++i) {
      const bool finite = sum[i] - sum[i] == 0;
      inexact[i] |= finite ? 0 : 1;  // infinities and NaN: redone below
      any |= inexact[i];
      const A v = finite ? sum[i] : A{0};
      if constexpr (Avg && Pow2) {
        out[i] = Tr::storeScaled(v, reciprocal);
      } else {
        out[i] = Avg ? Tr::storeAvg(v, divisor) : Tr::store(v);
      }
    }
    for (size_t i = 0; any != 0 && i < n; ++i) {
      if (inexact[i] == 0) continue;
      for (int k = 0; k < nsrc; ++k) xs[k] = Tr::load(static_cast<const S*>(srcs[k])[base + i]);
      const double r = exactSum(xs.data(), nsrc, Tr::kFormat, Avg, divisor);
      out[i] = Tr::store(static_cast<A>(r));  // r is a value of the format: no rounding here
    }
    for (size_t i = 0; i < n; ++i) dst[base + i] = out[i];  // after every read of the block's sources
  }
}

template <class Tr>
void exactAvgKernel(void* dst, const void* const* srcs, int nsrc, size_t count, int divisor) {
  if (isPowerOfTwo(divisor)) return exactKernel<Tr, true, true>(dst, srcs, nsrc, count, divisor);
  exactKernel<Tr, true, false>(dst, srcs, nsrc, count, divisor);
}

template <class Tr>
void fillExactRow(ReduceFn* row) {
  row[0] = &exactKernel<Tr, false, false>;
  row[1] = &exactAvgKernel<Tr>;
}

}  // namespace
}  // namespace conflux::reduce
