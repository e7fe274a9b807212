// fp16 and bf16 kernels with the CPU's conversion instructions, for the translation units compiled
// with AVX2 and F16C: elements are widened (F16C for fp16, a shift for bf16),
// combined in float in source order, and narrowed once (F16C, or AVX2 integer rounding for bf16),
// sixteen elements per step; in the AVX-512 translation unit the same with 512-bit vectors (the
// AVX-512 forms of the same instructions), thirty-two per step.
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
// is the type's own business: an element-wise reduction only needs store to undo load.
struct HalfSimd {
  using Store = uint16_t;
  using F = __m256;
  static constexpr int kStep = 16;
  static void load(const uint16_t* p, __m256& lo, __m256& hi) {
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static void store(uint16_t* p, __m256 lo, __m256 hi) {
    store8(p, lo);
    store8(p + 8, hi);
  }

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
  using Store = uint16_t;
  using F = __m256;
  static constexpr int kStep = 16;
  static void load(const uint16_t* p, __m256& lo, __m256& hi) {
    __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), w));
    hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), w));
  }
  static void store(uint16_t* p, __m256 lo, __m256 hi) {
    __m256i r = _mm256_packus_epi32(round(lo), round(hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
  }

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

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define CONFLUX_NARROW_SIMD512 1
// The same with 512-bit vectors, 32 elements per step (the AVX-512 translation unit). unpack and
// packus work within 128-bit lanes at every width, so bf16 keeps its two-instruction widening.
struct HalfSimd512 {
  using Store = uint16_t;
  using F = __m512;
  static constexpr int kStep = 32;
  static void load(const uint16_t* p, __m512& lo, __m512& hi) {
    lo = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    hi = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16)));
  }
  static void store(uint16_t* p, __m512 lo, __m512 hi) {
    store16(p, lo);
    store16(p + 16, hi);
  }

 private:
  static void store16(uint16_t* p, __m512 v) {
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    h = _mm256_mask_blend_epi16(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), h, _mm256_set1_epi16(0x7e00));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), h);
  }
};

struct Bf16Simd512 {
  using Store = uint16_t;
  using F = __m512;
  static constexpr int kStep = 32;
  static void load(const uint16_t* p, __m512& lo, __m512& hi) {
    __m512i w = _mm512_loadu_si512(p);
    lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(_mm512_setzero_si512(), w));
    hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(_mm512_setzero_si512(), w));
  }
  static void store(uint16_t* p, __m512 lo, __m512 hi) {
    _mm512_storeu_si512(p, _mm512_packus_epi32(round(lo), round(hi)));
  }

 private:
  static __m512i round(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    r = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), r, _mm512_set1_epi32(0x7fc00000));
    return _mm512_srli_epi32(r, 16);
  }
};

#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
#define CONFLUX_NARROW_SIMD_BF16 1
// bf16 with AVX-512 BF16's conversion (vcvtne2ps2bf16: 32 floats rounded to nearest even in one
// instruction). It flushes subnormals to zero and keeps NaN payloads, so a step holding a subnormal
// or a NaN (rare in gradients) is narrowed by the integer rounding above instead: the bits stay
// those of every other instruction set.
struct Bf16SimdNe : Bf16Simd512 {
  static void store(uint16_t* p, __m512 lo, __m512 hi) {
    constexpr int kSubnormalOrNan = 0x20 | 0x01 | 0x80;  // vfpclassps: denormal, QNaN, SNaN
    if (__builtin_expect((_mm512_fpclass_ps_mask(lo, kSubnormalOrNan) | _mm512_fpclass_ps_mask(hi, kSubnormalOrNan)) != 0, 0)) {
      Bf16Simd512::store(p, lo, hi);
      return;
    }
    // load() widened 0-3 8-11 16-19 24-27 into lo and 4-7 12-15 20-23 28-31 into hi; the
    // conversion packs lo then hi, so the eight groups of four are put back in order.
    const __m512i r = reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo));
    _mm512_storeu_si512(p, _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), r));
  }
};
#endif

inline __m512 vmul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
inline __m512 vmax(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
inline __m512 vmin(__m512 a, __m512 b) { return _mm512_min_ps(a, b); }
inline __m512 vadd(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
inline __m512 vdiv(__m512 a, __m512 b) { return _mm512_div_ps(a, b); }
inline void vset1(__m512& v, float x) { v = _mm512_set1_ps(x); }
#endif

inline __m256 vmul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
inline __m256 vmax(__m256 a, __m256 b) { return _mm256_max_ps(a, b); }
inline __m256 vmin(__m256 a, __m256 b) { return _mm256_min_ps(a, b); }
inline __m256 vadd(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m256 vdiv(__m256 a, __m256 b) { return _mm256_div_ps(a, b); }
inline void vset1(__m256& v, float x) { v = _mm256_set1_ps(x); }

template <cfxRedOp_t Op, class F>
F combineV(F a, F b) {
  if constexpr (Op == cfxProd) return vmul(a, b);
  if constexpr (Op == cfxMax) return vmax(b, a);  // b > a ? b : a, i.e. a < b ? b : a
  if constexpr (Op == cfxMin) return vmin(b, a);  // b < a ? b : a
  if constexpr (Op == cfxSum || Op == cfxAvg) return vadd(a, b);
  return a;
}

// N sources (0: any number, given by nsrc), V::kStep elements per step. Pow2: Avg's divisor is a
// power of two, and the exact reciprocal multiplies (the same bits as the division; kernels_impl.h,
// Pow2Divisor); the scalar tail divides.
template <class V, cfxRedOp_t Op, int N, bool Pow2, class Combine, class Divide, class Widen, class Narrow>
void reduceNarrowSimd(typename V::Store* __restrict dst, const void* const* srcsv, int nsrc, size_t count, int divisor,
                      Combine combine, Divide divide, Widen widen, Narrow narrow) {
  using S = typename V::Store;
  constexpr int kMax = 8;
  const int n = N > 0 ? N : nsrc;
  const S* s[kMax];
  for (int k = 0; k < (N > 0 ? N : 1); ++k) s[k] = static_cast<const S*>(srcsv[k]);
  auto src = [&](int k) { return N > 0 ? s[k] : static_cast<const S*>(srcsv[k]); };
  using F = typename V::F;
  F div;
  vset1(div, Pow2 ? 1.0f / static_cast<float>(divisor) : static_cast<float>(divisor));
  size_t i = 0;
  for (; i + V::kStep <= count; i += V::kStep) {
    // 1 KiB ahead of each source: large inputs come from memory, and these steps spend long enough
    // on conversions that the hardware prefetchers fell behind (bf16 sum of two 32 MiB inputs on
    // the Intel Xeon VM: 4.6-5.1 -> 5.4-6.4 GB/s; fp8 2.2 -> 2.4-2.8).
    for (int k = 0; k < n; ++k) _mm_prefetch(reinterpret_cast<const char*>(src(k) + i) + 1024, _MM_HINT_T0);
    F lo, hi, lo2, hi2;
    V::load(src(0) + i, lo, hi);
    for (int k = 1; k < n; ++k) {
      V::load(src(k) + i, lo2, hi2);
      lo = combineV<Op>(lo, lo2);
      hi = combineV<Op>(hi, hi2);
    }
    if constexpr (Op == cfxAvg && Pow2) {
      lo = vmul(lo, div);
      hi = vmul(hi, div);
    } else if constexpr (Op == cfxAvg) {
      lo = vdiv(lo, div);
      hi = vdiv(hi, div);
    }
    V::store(dst + i, lo, hi);
  }
  for (; i < count; ++i) {
    float acc = widen(src(0)[i]);
    for (int k = 1; k < n; ++k) acc = combine(acc, widen(src(k)[i]));
    if constexpr (Op == cfxAvg) acc = divide(acc, divisor);
    dst[i] = narrow(acc);
  }
}

// `c` and `d` are the portable kernels' scalar operations, `w` and `nw` the type's scalar
// conversions, for the tail.
template <class V, cfxRedOp_t Op, bool Pow2, class Combine, class Divide, class Widen, class Narrow>
void reduceNarrowSimd(typename V::Store* dst, const void* const* srcs, int nsrc, size_t count, int divisor, Combine c, Divide d,
                      Widen w, Narrow nw) {
  switch (nsrc) {
    case 1: return reduceNarrowSimd<V, Op, 1, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
    case 2: return reduceNarrowSimd<V, Op, 2, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
    case 3: return reduceNarrowSimd<V, Op, 3, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
    case 4: return reduceNarrowSimd<V, Op, 4, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
    case 8: return reduceNarrowSimd<V, Op, 8, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
    default: return reduceNarrowSimd<V, Op, 0, Pow2>(dst, srcs, nsrc, count, divisor, c, d, w, nw);
  }
}

}  // namespace
}  // namespace conflux::reduce

#endif
