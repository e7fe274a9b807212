// fp16 and bf16 kernels with the CPU's conversion instructions, for the translation units compiled
// with AVX2 and F16C: elements are widened (F16C for fp16, a shift for bf16),
// combined in float in source order, and narrowed once (F16C, or AVX2 integer rounding for bf16),
// sixteen elements per step.
// The bits are those of the portable kernels (kernels_impl.h): the float operations are the same
// (max and min keep `a < b ? b : a`), rounding is to nearest even, and every NaN becomes the
// positive canonical quiet NaN (the hardware alone would keep its sign and payload).
#pragma once

#include <cstddef>
#include <cstdint>

#include "conflux/conflux.h"
#include "reduce/float_formats.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define CONFLUX_NARROW_SIMD 1

namespace conflux::reduce {
namespace {

// Each type moves 16 elements per step as two vectors of 8 floats. The lanes' order inside the pair
// is the type's own business: an element-wise reduction only needs store16 to undo load16.
struct HalfSimd {
  static void load16(const uint16_t* p, __m256& lo, __m256& hi) {
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static void store16(uint16_t* p, __m256 lo, __m256 hi) {
    store8(p, lo);
    store8(p + 8, hi);
  }
  static float load(uint16_t v) { return halfBitsToFloat(v); }
  static uint16_t store(float v) { return floatToHalfBits(v); }

 private:
  static void store8(uint16_t* p, __m256 v) {
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_blendv_epi8(h, _mm_set1_epi16(0x7e00), nan16));
  }
};

// bf16 is the upper half of a float. Interleaving 16 of them with zeros (unpacklo/hi) widens them
// in two instructions, in the order 0-3 8-11 | 4-7 12-15; packus of the two halves, after rounding
// and shifting down, restores 0-15 exactly, so no cross-lane permute is needed either way.
struct Bf16Simd {
  static void load16(const uint16_t* p, __m256& lo, __m256& hi) {
    __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));
    hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));
  }
  static void store16(uint16_t* p, __m256 lo, __m256 hi) {
    __m256i r = _mm256_packus_epi32(round(lo), round(hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
  }
  static float load(uint16_t v) { return bf16ToFloat(v); }
  static uint16_t store(float v) { return floatToBf16(v); }

 private:
  // Rounded to nearest even into the upper 16 bits, NaNs made canonical, shifted down (so each
  // lane holds 0..0xffff and packus never saturates).
  static __m256i round(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7fc00000), _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
    return _mm256_srli_epi32(r, 16);
  }
};

template <cfxRedOp_t Op>
__m256 combine8(__m256 a, __m256 b) {
  if constexpr (Op == cfxProd) return _mm256_mul_ps(a, b);
  if constexpr (Op == cfxMax) return _mm256_max_ps(b, a);  // b > a ? b : a, i.e. a < b ? b : a
  if constexpr (Op == cfxMin) return _mm256_min_ps(b, a);  // b < a ? b : a
  if constexpr (Op == cfxSum || Op == cfxAvg) return _mm256_add_ps(a, b);
  return a;
}

// N sources (0: any number, given by nsrc). `combine` and `divide` are the portable kernels'
// scalar operations, for the tail.
template <class V, cfxRedOp_t Op, int N, class Combine, class Divide>
void reduceNarrowSimd(uint16_t* __restrict dst, const void* const* srcsv, int nsrc, size_t count, int divisor,
                      Combine combine, Divide divide) {
  constexpr int kMax = 8;
  const int n = N > 0 ? N : nsrc;
  const uint16_t* s[kMax];
  for (int k = 0; k < (N > 0 ? N : 1); ++k) s[k] = static_cast<const uint16_t*>(srcsv[k]);
  auto src = [&](int k) { return N > 0 ? s[k] : static_cast<const uint16_t*>(srcsv[k]); };
  const __m256 div = _mm256_set1_ps(static_cast<float>(divisor));
  size_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m256 lo, hi, lo2, hi2;
    V::load16(src(0) + i, lo, hi);
    for (int k = 1; k < n; ++k) {
      V::load16(src(k) + i, lo2, hi2);
      lo = combine8<Op>(lo, lo2);
      hi = combine8<Op>(hi, hi2);
    }
    if constexpr (Op == cfxAvg) {
      lo = _mm256_div_ps(lo, div);
      hi = _mm256_div_ps(hi, div);
    }
    V::store16(dst + i, lo, hi);
  }
  for (; i < count; ++i) {
    float acc = V::load(src(0)[i]);
    for (int k = 1; k < n; ++k) acc = combine(acc, V::load(src(k)[i]));
    if constexpr (Op == cfxAvg) acc = divide(acc, divisor);
    dst[i] = V::store(acc);
  }
}

template <class V, cfxRedOp_t Op, class Combine, class Divide>
void reduceNarrowSimd(uint16_t* dst, const void* const* srcs, int nsrc, size_t count, int divisor, Combine c, Divide d) {
  switch (nsrc) {
    case 1: return reduceNarrowSimd<V, Op, 1>(dst, srcs, nsrc, count, divisor, c, d);
    case 2: return reduceNarrowSimd<V, Op, 2>(dst, srcs, nsrc, count, divisor, c, d);
    case 3: return reduceNarrowSimd<V, Op, 3>(dst, srcs, nsrc, count, divisor, c, d);
    case 4: return reduceNarrowSimd<V, Op, 4>(dst, srcs, nsrc, count, divisor, c, d);
    case 8: return reduceNarrowSimd<V, Op, 8>(dst, srcs, nsrc, count, divisor, c, d);
    default: return reduceNarrowSimd<V, Op, 0>(dst, srcs, nsrc, count, divisor, c, d);
  }
}

}  // namespace
}  // namespace conflux::reduce

#endif
