// Narrow floating-point formats: bf16 and the two OCP fp8 formats (E4M3 "FN": no infinity, NaN is
// S.1111.111, max 448; E5M2: IEEE-like with infinities, max 57344). Conversions from float round
// to nearest even and saturate to the largest finite value (CUDA's __NV_SATFINITE), NaN stays NaN.
// fp16 uses the compiler's _Float16.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace conflux::reduce {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline float bf16ToFloat(uint16_t b) { return bitsFloat(static_cast<uint32_t>(b) << 16); }

// Branchless, so loops vectorise.
inline uint16_t floatToBf16(float f) {
  const uint32_t u = floatBits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded);  // NaN: canonical quiet NaN
}

// IEEE fp16 <-> float with integer operations only (vectorisable), exact, round to nearest even.
// NaNs become the positive canonical quiet NaN (in bf16 and fp8 too), so every instruction set
// produces the same bits.
inline float halfBitsToFloat(uint16_t h) {
  // Every case is computed and one is selected: no branches, so loops vectorise.
  const uint32_t shiftedExp = 0x7c00u << 13;
  const uint32_t o = ((static_cast<uint32_t>(h) & 0x7fffu) << 13) + ((127u - 15u) << 23);
  const uint32_t exp = ((static_cast<uint32_t>(h) & 0x7fffu) << 13) & shiftedExp;
  const uint32_t infNan = o + ((128u - 16u) << 23);
  const uint32_t subnormal = floatBits(bitsFloat(o + (1u << 23)) - bitsFloat(113u << 23));
  uint32_t r = exp == shiftedExp ? infNan : o;
  r = exp == 0 ? subnormal : r;
  return bitsFloat(r | ((static_cast<uint32_t>(h) & 0x8000u) << 16));
}

inline uint16_t floatToHalfBits(float x) {
  const uint32_t all = floatBits(x);
  const uint32_t sign = all & 0x80000000u;
  const uint32_t u = all ^ sign;
  const uint32_t special = u > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN: canonical quiet NaN
  // Subnormal or zero: adding 0.5 aligns the 10 mantissa bits; the FPU rounds to nearest even.
  const uint32_t subnormal = floatBits(bitsFloat(u) + 0.5f) - floatBits(0.5f);
  const uint32_t normal = (u + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((u >> 13) & 1u)) >> 13;
  uint32_t o = u < (113u << 23) ? subnormal : normal;
  o = u >= (127u + 16u) << 23 ? special : o;
  // A NaN's sign depends on operand order in the hardware: drop it, so every build agrees.
  return static_cast<uint16_t>(o | (u > 0x7f800000u ? 0u : sign >> 16));
}

struct Fp8Format {
  int mantissaBits;
  int bias;
  uint8_t maxCode;  // largest finite magnitude code
  uint8_t nanCode;
};
inline constexpr Fp8Format kE4M3{3, 7, 0x7e, 0x7f};
inline constexpr Fp8Format kE5M2{2, 15, 0x7b, 0x7f};

inline float fp8Decode(uint8_t code, const Fp8Format& f) {
  int sign = code >> 7;
  int e = (code & 0x7f) >> f.mantissaBits;
  int m = code & ((1 << f.mantissaBits) - 1);
  int emax = (1 << (7 - f.mantissaBits)) - 1;
  float v;
  if (f.mantissaBits == 2 && e == emax) {
    v = m == 0 ? INFINITY : NAN;
  } else if (f.mantissaBits == 3 && (code & 0x7f) == 0x7f) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(static_cast<float>(m), 1 - f.bias - f.mantissaBits);
  } else {
    v = std::ldexp(static_cast<float>((1 << f.mantissaBits) | m), e - f.bias - f.mantissaBits);
  }
  return sign ? -v : v;
}

// fp8Encode and fp8ToFloat are always inlined: GCC otherwise called them out of line from the
// kernels' loops, which then stayed scalar (fp8 sum 0.31 GB/s of output against 1.4 inlined and
// vectorised, reduce_kernel_bench on AVX-512; a 2-rank fp8 AllReduce 0.42-0.51 against 1.15-1.88).
// Branchless float -> fp8 (the same results as fp8EncodeReference, vectorisable): subnormals
// through a magic-number addition (the FPU rounds to nearest even), normals by integer rounding.
[[gnu::always_inline]] inline uint8_t fp8Encode(float x, const Fp8Format& f) {
  const uint32_t all = floatBits(x);
  const uint32_t sign = (all >> 24) & 0x80u;
  const uint32_t u = all & 0x7fffffffu;
  const int shift = 23 - f.mantissaBits;
  const uint32_t minNormal = static_cast<uint32_t>(127 + 1 - f.bias) << 23;
  const float magic = bitsFloat(static_cast<uint32_t>(127 + 24 - f.bias - f.mantissaBits) << 23);
  const uint32_t subnormal = floatBits(bitsFloat(u) + magic) - floatBits(magic);
  // u + rounding bias stays below 2^32 for every finite or infinite u (u <= 0x7f800000).
  uint32_t normal = (u + (static_cast<uint32_t>(f.bias - 127) << 23) + ((1u << (shift - 1)) - 1u) + ((u >> shift) & 1u)) >> shift;
  normal = normal > f.maxCode ? f.maxCode : normal;  // saturate (infinity too)
  uint32_t code = u < minNormal ? subnormal : normal;
  const bool nan = u > 0x7f800000u;
  code = nan ? f.nanCode : code;
  return static_cast<uint8_t>((nan ? 0u : sign) | code);  // NaNs canonical, as for fp16
}

// The straightforward definition, kept as the oracle for fp8Encode's tests.
inline uint8_t fp8EncodeReference(float x, const Fp8Format& f) {
  uint32_t u = floatBits(x);
  uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | f.nanCode;
  float a = bitsFloat(u);
  float minNormal = std::ldexp(1.0f, 1 - f.bias);
  if (a < minNormal) {
    // Subnormal range: quantise to multiples of the smallest subnormal, ties to even. A result of
    // 2^M is exactly the code of the smallest normal.
    float q = std::nearbyint(std::ldexp(a, f.bias - 1 + f.mantissaBits));
    return sign | static_cast<uint8_t>(q);
  }
  int shift = 23 - f.mantissaBits;
  uint64_t r = u;
  r += (1u << (shift - 1)) - 1u + ((r >> shift) & 1u);  // round to nearest even
  int exp = static_cast<int>(r >> 23) - 127 + f.bias;
  uint32_t mant = static_cast<uint32_t>(r >> shift) & ((1u << f.mantissaBits) - 1u);
  uint64_t code = (static_cast<uint64_t>(exp) << f.mantissaBits) | mant;
  if (code > f.maxCode) code = f.maxCode;  // saturate (also infinity)
  return sign | static_cast<uint8_t>(code);
}

// Branchless fp8 -> float (vectorisable); equal to fp8Decode for every code.
[[gnu::always_inline]] inline float fp8ToFloat(uint8_t code, const Fp8Format& f) {
  const uint32_t c = code;
  const uint32_t sign = (c & 0x80u) << 24;
  const uint32_t mag = c & 0x7fu;
  const uint32_t e = mag >> f.mantissaBits;
  const uint32_t m = mag & ((1u << f.mantissaBits) - 1u);
  const uint32_t emax = (1u << (7 - f.mantissaBits)) - 1u;
  const uint32_t normal = ((e + 127u - static_cast<uint32_t>(f.bias)) << 23) | (m << (23 - f.mantissaBits));
  // Subnormals: m * 2^(1 - bias - M), exact in float.
  const uint32_t subnormal = floatBits(static_cast<float>(m) * bitsFloat(static_cast<uint32_t>(127 + 1 - f.bias - f.mantissaBits) << 23));
  const bool isNan = f.mantissaBits == 3 ? mag == 0x7fu : (e == emax && m != 0);
  const bool isInf = f.mantissaBits == 2 && e == emax && m == 0;
  uint32_t r = e == 0 ? subnormal : normal;
  r = isInf ? 0x7f800000u : r;
  r = isNan ? 0x7fc00000u : r;
  return bitsFloat(r | sign);
}

}  // namespace conflux::reduce
