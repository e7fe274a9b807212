// fp8 kernels (E4M3 and E5M2) with vector instructions, for the translation units compiled with AVX2
// and F16C (sixteen elements per step) or AVX-512 (thirty-two): reduceNarrowSimd (narrow_simd.h)
// drives them as it drives fp16 and bf16.
//
// Widening goes through fp16, whose conversion instructions are exact for every input:
// - an E5M2 code is the upper byte of the fp16 with the same value (subnormals, infinities and NaNs
//   included);
// - an E4M3 code's 7 magnitude bits, shifted into fp16's exponent and mantissa, give the value
//   divided by 2^8 (bias 7 against 15, subnormals too), so one exact multiplication follows; the
//   NaN codes (magnitude 0x7f) become fp16's canonical NaN first.
// Narrowing is fp8Encode (float_formats.h), lane by lane in integer arithmetic: the same operations
// on the same bits, so every instruction set stores the portable kernels' codes.
#pragma once

#include <cstdint>

#include "reduce/float_formats.h"
#include "reduce/narrow_simd.h"

#if defined(CONFLUX_NARROW_SIMD)

namespace conflux::reduce {
namespace {

// fp8Encode's constants for one format.
template <bool E4M3>
struct Fp8Constants {
  static constexpr Fp8Format kF = E4M3 ? kE4M3 : kE5M2;
  static constexpr int kShift = 23 - kF.mantissaBits;
  static constexpr uint32_t kMagic = static_cast<uint32_t>(127 + 24 - kF.bias - kF.mantissaBits) << 23;
  static constexpr uint32_t kMinNormal = static_cast<uint32_t>(127 + 1 - kF.bias) << 23;
  // The normal path's addend: the rebias, plus the rounding bias without the odd bit.
  static constexpr uint32_t kRebias = (static_cast<uint32_t>(kF.bias - 127) << 23) + ((1u << (kShift - 1)) - 1u);
};

template <bool E4M3>
struct Fp8Simd {
  using Store = uint8_t;
  using F = __m256;
  using C = Fp8Constants<E4M3>;
  static constexpr int kStep = 16;

  static void load(const uint8_t* p, __m256& lo, __m256& hi) {
    const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    __m256i h = _mm256_slli_epi16(w, 8);
    if constexpr (E4M3) {
      const __m256i mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7f));
      h = _mm256_or_si256(_mm256_slli_epi16(mag, 7), _mm256_and_si256(h, _mm256_set1_epi16(static_cast<short>(0x8000))));
      h = _mm256_blendv_epi8(h, _mm256_set1_epi16(0x7e00), _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x7f)));
    }
    lo = scale(_mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    hi = scale(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
  }

  static void store(uint8_t* p, __m256 lo, __m256 hi) {
    // Codes in 32-bit lanes -> 16-bit (packus interleaves the halves by 128-bit lane; the permute
    // puts lo's eight before hi's) -> bytes.
    __m256i w = _mm256_packus_epi32(encode(lo), encode(hi));
    w = _mm256_permute4x64_epi64(w, _MM_SHUFFLE(3, 1, 2, 0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
  }

 private:
  static __m256 scale(__m256 v) { return E4M3 ? _mm256_mul_ps(v, _mm256_set1_ps(256.0f)) : v; }

  // fp8Encode on eight lanes (u has no sign bit, so signed comparisons order it as unsigned).
  static __m256i encode(__m256 x) {
    const __m256i all = _mm256_castps_si256(x);
    const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(all, 24), _mm256_set1_epi32(0x80));
    const __m256i u = _mm256_and_si256(all, _mm256_set1_epi32(0x7fffffff));
    const __m256i magic = _mm256_set1_epi32(static_cast<int>(C::kMagic));
    const __m256i subnormal =
        _mm256_sub_epi32(_mm256_castps_si256(_mm256_add_ps(_mm256_castsi256_ps(u), _mm256_castsi256_ps(magic))), magic);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, C::kShift), _mm256_set1_epi32(1));
    __m256i normal = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(static_cast<int>(C::kRebias))), odd), C::kShift);
    normal = _mm256_min_epu32(normal, _mm256_set1_epi32(C::kF.maxCode));
    const __m256i isSubnormal = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(C::kMinNormal)), u);
    const __m256i code = _mm256_or_si256(_mm256_blendv_epi8(normal, subnormal, isSubnormal), sign);
    const __m256i nan = _mm256_cmpgt_epi32(u, _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(code, _mm256_set1_epi32(C::kF.nanCode), nan);
  }
};

#if defined(CONFLUX_NARROW_SIMD512)
// The same with 512-bit vectors: thirty-two codes per step, two vectors of sixteen floats.
template <bool E4M3>
struct Fp8Simd512 {
  using Store = uint8_t;
  using F = __m512;
  using C = Fp8Constants<E4M3>;
  static constexpr int kStep = 32;

  static void load(const uint8_t* p, __m512& lo, __m512& hi) {
    const __m512i w = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    __m512i h = _mm512_slli_epi16(w, 8);
    if constexpr (E4M3) {
      const __m512i mag = _mm512_and_si512(w, _mm512_set1_epi16(0x7f));
      // (mag << 7) | (h & 0x8000), then the NaN codes' canonical fp16 NaN.
      h = _mm512_ternarylogic_epi32(_mm512_slli_epi16(mag, 7), h, _mm512_set1_epi16(static_cast<short>(0x8000)), 0xf8);
      h = _mm512_mask_mov_epi16(h, _mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x7f)), _mm512_set1_epi16(0x7e00));
    }
    lo = scale(_mm512_cvtph_ps(_mm512_castsi512_si256(h)));
    hi = scale(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)));
  }

  static void store(uint8_t* p, __m512 lo, __m512 hi) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(encode(lo)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm512_cvtepi32_epi8(encode(hi)));
  }

 private:
  static __m512 scale(__m512 v) { return E4M3 ? _mm512_mul_ps(v, _mm512_set1_ps(256.0f)) : v; }

  static __m512i encode(__m512 x) {
    const __m512i all = _mm512_castps_si512(x);
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(all, 24), _mm512_set1_epi32(0x80));
    const __m512i u = _mm512_and_si512(all, _mm512_set1_epi32(0x7fffffff));
    const __m512i magic = _mm512_set1_epi32(static_cast<int>(C::kMagic));
    const __m512i subnormal =
        _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(u), _mm512_castsi512_ps(magic))), magic);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, C::kShift), _mm512_set1_epi32(1));
    __m512i normal = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(static_cast<int>(C::kRebias))), odd), C::kShift);
    normal = _mm512_min_epu32(normal, _mm512_set1_epi32(C::kF.maxCode));
    const __mmask16 isSubnormal = _mm512_cmplt_epu32_mask(u, _mm512_set1_epi32(static_cast<int>(C::kMinNormal)));
    __m512i code = _mm512_or_si512(_mm512_mask_blend_epi32(isSubnormal, normal, subnormal), sign);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(u, _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_blend_epi32(nan, code, _mm512_set1_epi32(C::kF.nanCode));
  }
};
#endif

}  // namespace
}  // namespace conflux::reduce

#endif
