// The exact kernels' fast path (exact_sum.h), included by kernels_impl.h once per instruction set.
// Internal linkage, as there.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reduce/exact_sum.h"
#include "reduce/kernels.h"
#include "reduce/float_formats.h"

namespace conflux::reduce {
namespace {

// Per floating-point datatype: how an element becomes a double (exactly), and how a double that is
// exact (Sum) or rounded to odd (Avg; exact_sum.h) becomes the element, rounded once.
struct ExactF64 {
  using Store = double;
  static constexpr const ExactFormat& kFormat = kExactF64;
  static double load(double v) { return v; }
  static double store(double exact) { return exact; }
  static double storeAvg(double s, double divisor) { return s / divisor; }  // IEEE: correctly rounded
};
struct ExactF32 {
  using Store = float;
  static constexpr const ExactFormat& kFormat = kExactF32;
  static double load(float v) { return v; }
  static float store(double exact) { return static_cast<float>(exact); }
  static float storeAvg(double s, double divisor) { return static_cast<float>(quotientToOdd(s, divisor)); }
};
// The narrow formats: from the double through float by round-to-odd, then their own rounding.
template <class Narrow>
struct ExactNarrow {
  using Store = typename Narrow::Store;
  static constexpr const ExactFormat& kFormat = Narrow::kFormat;
  static double load(Store v) { return Narrow::toFloat(v); }
  static Store store(double exact) { return Narrow::fromFloat(roundOddToFloat(exact)); }
  static Store storeAvg(double s, double divisor) { return Narrow::fromFloat(roundOddToFloat(quotientToOdd(s, divisor))); }
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

// Blocks of elements: sum every source in double in source order, flagging an element when an
// addition rounded (TwoSum's error is not zero: NaN for infinities and NaNs, so those are flagged
// too); take the flagged ones from exactSum, the others from the double. The output may be one of
// the sources (a block is read whole before it is written).
template <class Tr, bool Avg>
void exactKernel(void* dstv, const void* const* srcs, int nsrc, size_t count, int divisor) {
  using S = typename Tr::Store;
  constexpr size_t kBlock = 256;
  double sum[kBlock];
  int64_t inexact[kBlock];
  S out[kBlock];
  std::vector<double> xs(static_cast<size_t>(nsrc));
  auto* dst = static_cast<S*>(dstv);
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = count - base < kBlock ? count - base : kBlock;
    const S* s0 = static_cast<const S*>(srcs[0]) + base;
    for (size_t i = 0; i < n; ++i) {
      sum[i] = Tr::load(s0[i]);
      inexact[i] = 0;
    }
    for (int k = 1; k < nsrc; ++k) {
      const S* sk = static_cast<const S*>(srcs[k]) + base;
      for (size_t i = 0; i < n; ++i) {
        const double a = sum[i], b = Tr::load(sk[i]);
        const double t = a + b;
        const double bv = t - a;
        const double err = (a - (t - bv)) + (b - bv);
        inexact[i] |= err != 0 ? 1 : 0;
        sum[i] = t;
      }
    }
    // Every element from its double (a loop without branches, so it vectorises), then the flagged
    // ones again from exactSum (rare in real data).
    for (size_t i = 0; i < n; ++i) {
      const double v = sum[i] - sum[i] == 0 ? sum[i] : 0.0;  // infinities and NaN: flagged, redone below
      out[i] = Avg ? Tr::storeAvg(v, divisor) : Tr::store(v);
    }
    for (size_t i = 0; i < n; ++i) {
      if (inexact[i] == 0 && std::isfinite(sum[i])) continue;
      for (int k = 0; k < nsrc; ++k) xs[k] = Tr::load(static_cast<const S*>(srcs[k])[base + i]);
      const double r = exactSum(xs.data(), nsrc, Tr::kFormat, Avg, divisor);
      out[i] = Tr::store(r);  // r is a value of the format: no rounding here
    }
    std::memcpy(dst + base, out, n * sizeof(S));  // after every read of the block's sources
  }
}

template <class Tr>
void fillExactRow(ReduceFn* row) {
  row[0] = &exactKernel<Tr, false>;
  row[1] = &exactKernel<Tr, true>;
}

}  // namespace
}  // namespace conflux::reduce
