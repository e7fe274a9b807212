// Exact reductions (cfxSumExact, cfxAvgExact): each output element is the exact mathematical sum
// of the inputs (Avg: that sum divided by the divisor), rounded once, to nearest even, to the
// datatype. The result is a function of the multiset of inputs alone, so it cannot depend on the
// algorithm, the chunking, the order of ranks or the host layout.
//
// How (docs/exact-reductions.md has the proofs):
//  - fast path, in the kernels (kernels_impl.h): every input converts exactly to double; the
//    kernel sums in double and checks, with Knuth's TwoSum, that no addition rounded. When none
//    did, the double is the exact sum, and one rounding (through round-to-odd for the formats
//    narrower than float, and for Avg's quotient) gives the correctly rounded result;
//  - slow path (exactSum below), for the elements whose double sum rounded, overflowed or met
//    an infinity or NaN: a fixed-point accumulator of 2240 bits whose bit 0 weighs 2^-1074 holds
//    the sum of any 2^31 doubles exactly (integer additions, in any order); the result is rounded
//    from its bits.
// Rules for special values: a NaN input, or +inf with -inf, gives NaN; otherwise an infinite
// input gives that infinity. An exact sum of zero is -0 when every input is -0, else +0. Overflow
// gives infinity only when the exact result rounds past the format's largest value; the fp8
// formats saturate there instead, as every conversion to fp8 in Conflux does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace conflux::reduce {

// Where a format rounds: its significand bits (with the hidden bit) and the exponent of its
// smallest subnormal (the quantum of the subnormal range).
struct ExactFormat {
  int precision;
  int minExp;
};
inline constexpr ExactFormat kExactF64{53, -1074};
inline constexpr ExactFormat kExactF32{24, -149};
inline constexpr ExactFormat kExactBf16{8, -133};
inline constexpr ExactFormat kExactF16{11, -24};
inline constexpr ExactFormat kExactE4M3{4, -9};
inline constexpr ExactFormat kExactE5M2{3, -16};

// The sum of xs[0..n) (each a value of format `f`, hence exact in double), or with `avg` that sum
// divided by `divisor`, rounded once to nearest even to `f`, as a double that is exactly a value
// of `f` (or an infinity, or NaN). n < 2^31.
double exactSum(const double* xs, int n, const ExactFormat& f, bool avg, int divisor);

// `d` rounded to float by round-to-odd: exact when d is a float; else d truncated toward zero
// with its last bit set. A second rounding, to nearest even to any precision of 22 bits or fewer,
// is then the correct rounding of d (Boldo and Melquiond, 2008).
inline float roundOddToFloat(double d) {
  // Branch-free, so the kernels' loops vectorise (NaN never comes here: the kernels send it to
  // exactSum).
  const float f = static_cast<float>(d);
  const double back = f;
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  const uint32_t away = std::fabs(back) > std::fabs(d) ? 1u : 0u;  // rounded away from zero: step back
  b = back != d ? ((b - away) | 1u) : b;
  float r;
  std::memcpy(&r, &b, sizeof(r));
  return r;
}

// s / divisor, where s is exact, rounded to odd at double's precision: correctly rounded once
// more to any precision of 51 bits or fewer. The remainder s - q * divisor is exact by FMA.
inline double quotientToOdd(double s, double divisor) {
  const double q = s / divisor;
  const double r = std::fma(-q, divisor, s);
  uint64_t b;
  std::memcpy(&b, &q, sizeof(b));
  const uint64_t away = (r < 0) != (q < 0) ? 1u : 0u;  // |q| exceeds the quotient: truncate toward zero
  b = r != 0 ? ((b - away) | 1u) : b;
  double o;
  std::memcpy(&o, &b, sizeof(o));
  return o;
}

}  // namespace conflux::reduce
