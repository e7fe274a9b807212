// Two-source kernels in fp16 arithmetic, for the translation unit compiled with AVX-512 FP16
// (kernels_avx512fp16.cc): fp16, and fp8 (E4M3, E5M2) through fp16, 32 elements per step, no
// widening to fp32. The portable kernels widen to fp32, combine, and round once to the stored
// type; these give the same bits, because with two sources the fp16 result rounds to the same
// value:
// - fp16 sum and prod: fp32 holds at least 2p + 1 bits of an 11-bit format (24 >= 23), so rounding
//   to fp32 first and then to fp16 gives the correctly rounded fp16 result (double rounding is
//   innocuous there), which is what vaddph and vmulph return. Max and min round nothing.
// - fp8: every E4M3 and E5M2 value is an fp16 value. A sum or difference whose exponents differ by
//   at most 6 (E4M3) or 7 (E5M2) fits fp16's 11 bits exactly; otherwise the smaller operand is
//   less than half an fp8 unit of the larger, so both paths round to the larger. A product has 8
//   (E4M3) or 6 (E5M2) significant bits: exact in fp16 where the fp8 result can be non-zero, and
//   where fp16 underflows the fp8 result is a zero of the same sign either way. Avg of two is
//   a/2 + b/2: each half exact, one rounding, no overflow (the fp32 path's (a + b)/2 is the same
//   value); other divisors keep the fp32 kernels. An E4M3 product above fp16's range is an fp16
//   infinity, which saturates to 448 as the fp32 value does.
// - fp16 Avg keeps the fp32 kernels ((a + b)/2 overflows fp16 where the fp32 sum does not).
// The tests compare every pair of fp8 codes, and every fp16 code against a set of others, with the
// portable kernels (tests/kernels_test.cc). NaNs are stored canonical, as there. AVX-512 FP16
// ignores MXCSR's DAZ and FTZ: fp16 subnormals always count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "conflux/conflux.h"
#include "reduce/float_formats.h"

#if defined(__AVX512FP16__) && defined(__AVX512BW__)
#include <immintrin.h>
#define CONFLUX_FP16_NATIVE 1

namespace conflux::reduce {
namespace {

// The op on 32 fp16 lanes, in the portable kernels' operand order (max: a < b ? b : a, min:
// b < a ? b : a; vmaxph and vminph return their second operand when either is NaN).
template <cfxRedOp_t Op>
__m512h combinePh(__m512h a, __m512h b) {
  if constexpr (Op == cfxProd) return _mm512_mul_ph(a, b);
  if constexpr (Op == cfxMax) return _mm512_max_ph(b, a);
  if constexpr (Op == cfxMin) return _mm512_min_ph(b, a);
  if constexpr (Op == cfxAvg) {
    const __m512h half = _mm512_set1_ph(static_cast<_Float16>(0.5f));
    return _mm512_add_ph(_mm512_mul_ph(a, half), _mm512_mul_ph(b, half));
  }
  return _mm512_add_ph(a, b);
}

inline __m512i set16(uint16_t v) { return _mm512_set1_epi16(static_cast<short>(v)); }

// fp16 elements as they are stored.
struct HalfNative {
  using Store = uint16_t;
  static __m512h load(const uint16_t* p, __mmask32 m) { return _mm512_castsi512_ph(_mm512_maskz_loadu_epi16(m, p)); }
  static void store(uint16_t* p, __mmask32 m, __m512h v) {
    const __m512i bits = _mm512_mask_mov_epi16(_mm512_castph_si512(v), _mm512_cmp_ph_mask(v, v, _CMP_UNORD_Q), set16(0x7e00));
    _mm512_mask_storeu_epi16(p, m, bits);
  }
};

// fp8 codes widened to fp16 and narrowed back (fp8Encode's steps on fp16 bits).
template <bool E4M3>
struct Fp8Native {
  using Store = uint8_t;
  static constexpr Fp8Format kF = E4M3 ? kE4M3 : kE5M2;
  static constexpr int kShift = 10 - kF.mantissaBits;
  // fp16 bits of the smallest normal fp8 value, 2^(1 - bias).
  static constexpr uint16_t kMinNormal = static_cast<uint16_t>((15 + 1 - kF.bias) << 10);
  // Adding 2^(11 - bias - M) rounds a subnormal to the fp8 quantum 2^(1 - bias - M) (its fp16 unit).
  static constexpr uint16_t kMagic = static_cast<uint16_t>((15 + 11 - kF.bias - kF.mantissaBits) << 10);
  // The normal path's addend, modulo 2^16: the rebias, plus the rounding bias without the odd bit.
  static constexpr uint16_t kRebias = static_cast<uint16_t>(((kF.bias - 15) << 10) + (1 << (kShift - 1)) - 1);

  static __m512h load(const uint8_t* p, __mmask32 m) {
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(m, p));
    if constexpr (!E4M3) return _mm512_castsi512_ph(_mm512_slli_epi16(w, 8));  // the upper byte of an fp16
    // The 7 magnitude bits in fp16's exponent and mantissa give the value / 2^8 (subnormals too),
    // with the sign in bit 15; the NaN codes become fp16's NaN; then one exact multiplication.
    const __m512i mag = _mm512_and_si512(w, set16(0x7f));
    __m512i h = _mm512_ternarylogic_epi32(_mm512_slli_epi16(mag, 7), _mm512_slli_epi16(w, 8), set16(0x8000), 0xf8);
    h = _mm512_mask_mov_epi16(h, _mm512_cmpeq_epi16_mask(mag, set16(0x7f)), set16(0x7e00));
    return _mm512_mul_ph(_mm512_castsi512_ph(h), _mm512_set1_ph(static_cast<_Float16>(256.0f)));
  }

  static void store(uint8_t* p, __mmask32 m, __m512h v) {
    const __m512i all = _mm512_castph_si512(v);
    const __m512i u = _mm512_and_si512(all, set16(0x7fff));
    const __m512i magic = set16(kMagic);
    const __m512i subnormal =
        _mm512_sub_epi16(_mm512_castph_si512(_mm512_add_ph(_mm512_castsi512_ph(u), _mm512_castsi512_ph(magic))), magic);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi16(u, kShift), set16(1));
    __m512i normal = _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(u, set16(kRebias)), odd), kShift);
    normal = _mm512_min_epu16(normal, set16(kF.maxCode));  // saturate (infinity too)
    __m512i code = _mm512_mask_blend_epi16(_mm512_cmplt_epu16_mask(u, set16(kMinNormal)), normal, subnormal);
    code = _mm512_ternarylogic_epi32(code, _mm512_srli_epi16(all, 8), set16(0x80), 0xf8);  // | sign
    code = _mm512_mask_mov_epi16(code, _mm512_cmpgt_epu16_mask(u, set16(0x7c00)), set16(kF.nanCode));  // NaN, no sign
    _mm256_mask_storeu_epi8(p, m, _mm512_cvtepi16_epi8(code));
  }
};

// How far ahead of each source the loop prefetches (as reduceNarrowSimd does): E4M3 sum of two
// 32 MiB inputs on the Intel Xeon VM, 3.1-3.2 GB/s without, 4.0-4.7 with.
inline constexpr size_t kPrefetchBytes = 1024;

// dst[i] = a[i] op b[i], 32 elements per step, the tail under a mask (the same operations).
template <class V, cfxRedOp_t Op>
void reducePairNative(void* dstv, const void* av, const void* bv, size_t count) {
  using S = typename V::Store;
  auto* dst = static_cast<S*>(dstv);
  const auto* a = static_cast<const S*>(av);
  const auto* b = static_cast<const S*>(bv);
  size_t i = 0;
  for (; i + 32 <= count; i += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(a + i) + kPrefetchBytes, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + i) + kPrefetchBytes, _MM_HINT_T0);
    const __mmask32 all = ~__mmask32{0};
    V::store(dst + i, all, combinePh<Op>(V::load(a + i, all), V::load(b + i, all)));
  }
  if (i < count) {
    const __mmask32 tail = static_cast<__mmask32>((uint64_t{1} << (count - i)) - 1);
    V::store(dst + i, tail, combinePh<Op>(V::load(a + i, tail), V::load(b + i, tail)));
  }
}

// Whether reducePairNative gives the portable kernels' bits for this call (see the top).
template <class V, cfxRedOp_t Op>
constexpr bool pairIsNative(int nsrc, int divisor) {
  if (nsrc != 2) return false;
  if constexpr (Op == cfxAvg) return !std::is_same_v<V, HalfNative> && divisor == 2;
  return true;
}

}  // namespace
}  // namespace conflux::reduce

#endif
