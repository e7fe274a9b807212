// The slow path of the exact reductions (exact_sum.h): a fixed-point accumulator.
//
// Every finite double is an integer multiple of 2^-1074 below 2^1024, so it is an integer of at
// most 2098 bits once scaled by 2^1074. The accumulator holds such integers in 70 limbs of 32 bits
// (2240 bits), each limb an int64 that takes up to 2^31 signed 32-bit additions before carrying:
// adding a double is three integer additions, exact and independent of order. Rounding reads the
// bits of the magnitude: the `precision` bits from the leading one (or fewer, from the format's
// smallest quantum up, in its subnormal range), then the next bit and whether any bit below it is
// set decide, to nearest even. Avg divides the magnitude, scaled by 2^64, by the divisor, and a
// nonzero remainder joins the bits below: the quotient is then rounded once, as the sum is.
#include "reduce/exact_sum.h"

#include <algorithm>
#include <limits>

namespace conflux::reduce {

namespace {

constexpr int kOffset = 1074;  // bit 0 of the accumulator weighs 2^-1074
constexpr int kLimbs = 70;     // 2240 bits: any 2^31 doubles below 2^1024, with a sign
constexpr int kAvgShift = 64;  // Avg's quotient keeps 64 more bits than the sum

class Accumulator {
 public:
  // A finite, nonzero double.
  void add(double x) {
    int e = 0;
    const double m = std::frexp(std::fabs(x), &e);  // |x| = m * 2^e, m in [0.5, 1)
    uint64_t significand = static_cast<uint64_t>(std::ldexp(m, 53));
    int pos = e - 53 + kOffset;
    if (pos < 0) {  // a subnormal: its low bits are zero
      significand >>= -pos;
      pos = 0;
    }
    const unsigned __int128 v = static_cast<unsigned __int128>(significand) << (pos % 32);
    const int i = pos / 32;
    const int64_t sign = x < 0 ? -1 : 1;
    limb_[i] += sign * static_cast<int64_t>(static_cast<uint32_t>(v));
    limb_[i + 1] += sign * static_cast<int64_t>(static_cast<uint32_t>(v >> 32));
    limb_[i + 2] += sign * static_cast<int64_t>(static_cast<uint32_t>(v >> 64));
    lo_ = std::min(lo_, i);
    hi_ = std::max(hi_, i + 2);
  }

  // The magnitude as 32-bit digits (little-endian, digits[0] weighs 2^-1074), into `digits`
  // (kLimbs of them); returns the number of digits up to the last nonzero one (0: the sum is zero)
  // and sets `negative`.
  int magnitude(uint32_t* digits, bool& negative) const {
    std::fill(digits, digits + kLimbs, 0u);
    if (hi_ < 0) {
      negative = false;
      return 0;
    }
    int64_t carry = 0;
    int i = lo_;
    for (; i < kLimbs; ++i) {
      const int64_t v = limb_[i] + carry;
      digits[i] = static_cast<uint32_t>(v);
      carry = v >> 32;  // arithmetic: floor division
      if (i >= hi_ && (carry == 0 || carry == -1)) break;
    }
    negative = carry < 0;
    const int top = std::min(i, kLimbs - 1);
    if (negative) {  // |value| = 2^(32 (top + 1)) - digits: two's complement
      uint64_t c = 1;
      for (int j = lo_; j <= top; ++j) {
        const uint64_t v = static_cast<uint64_t>(static_cast<uint32_t>(~digits[j])) + c;
        digits[j] = static_cast<uint32_t>(v);
        c = v >> 32;
      }
    }
    int used = top + 1;
    while (used > 0 && digits[used - 1] == 0) --used;
    return used;
  }

 private:
  int64_t limb_[kLimbs] = {};
  int lo_ = kLimbs;
  int hi_ = -1;
};

int bitLength(const uint32_t* digits, int ndigits) {
  if (ndigits == 0) return 0;
  return 32 * (ndigits - 1) + (32 - __builtin_clz(digits[ndigits - 1]));
}

bool bitAt(const uint32_t* digits, int ndigits, int bit) {
  if (bit < 0 || bit / 32 >= ndigits) return false;
  return (digits[bit / 32] >> (bit % 32)) & 1u;
}

// Whether any bit below `bit` is set.
bool anyBelow(const uint32_t* digits, int ndigits, int bit) {
  if (bit <= 0) return false;
  const int whole = std::min(bit / 32, ndigits);
  for (int j = 0; j < whole; ++j) {
    if (digits[j] != 0) return true;
  }
  if (whole < ndigits && bit % 32 != 0) return (digits[whole] & ((1u << (bit % 32)) - 1u)) != 0;
  return false;
}

// Bits [from, from + count) as an integer, count <= 64.
uint64_t bitsAt(const uint32_t* digits, int ndigits, int from, int count) {
  uint64_t v = 0;
  for (int b = count - 1; b >= 0; --b) v = (v << 1) | (bitAt(digits, ndigits, from + b) ? 1u : 0u);
  return v;
}

// The magnitude digits * 2^-scale (plus something below its last bit when `sticky`), rounded
// to nearest even to format `f`.
double roundMagnitude(const uint32_t* digits, int ndigits, int scale, bool sticky, const ExactFormat& f) {
  const int length = bitLength(digits, ndigits);
  const int quantum = f.minExp + scale;  // the bit of the format's smallest quantum
  const int k = std::max(length - f.precision, quantum);  // the lowest bit kept
  if (k <= 0) return std::ldexp(static_cast<double>(bitsAt(digits, ndigits, 0, length)), -scale);
  uint64_t keep = length > k ? bitsAt(digits, ndigits, k, length - k) : 0;
  const bool half = bitAt(digits, ndigits, k - 1);
  const bool below = sticky || anyBelow(digits, ndigits, k - 1);
  if (half && (below || (keep & 1u))) ++keep;
  return std::ldexp(static_cast<double>(keep), k - scale);  // past double's range: infinity
}

}  // namespace

double exactSum(const double* xs, int n, const ExactFormat& f, bool avg, int divisor) {
  bool nan = false, posInf = false, negInf = false, allNegZero = true;
  Accumulator acc;
  for (int i = 0; i < n; ++i) {
    const double x = xs[i];
    if (x != x) {
      nan = true;
    } else if (std::isinf(x)) {
      (x > 0 ? posInf : negInf) = true;
    } else if (x != 0) {
      acc.add(x);
    }
    allNegZero = allNegZero && x == 0 && std::signbit(x);
  }
  if (nan || (posInf && negInf)) return std::numeric_limits<double>::quiet_NaN();
  if (posInf || negInf) return posInf ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();

  uint32_t digits[kLimbs + kAvgShift / 32];
  bool negative = false;
  int ndigits = acc.magnitude(digits + kAvgShift / 32, negative);
  if (ndigits == 0) return allNegZero && n > 0 ? -0.0 : 0.0;
  double r;
  if (!avg || divisor == 1) {
    r = roundMagnitude(digits + kAvgShift / 32, ndigits, kOffset, false, f);
  } else {
    // Scaled by 2^64, then long division by the divisor from the top digit down.
    std::fill(digits, digits + kAvgShift / 32, 0u);
    ndigits += kAvgShift / 32;
    uint64_t rem = 0;
    const auto d = static_cast<uint64_t>(divisor);
    for (int j = ndigits - 1; j >= 0; --j) {
      const uint64_t cur = (rem << 32) | digits[j];
      digits[j] = static_cast<uint32_t>(cur / d);
      rem = cur % d;
    }
    while (ndigits > 0 && digits[ndigits - 1] == 0) --ndigits;
    r = roundMagnitude(digits, ndigits, kOffset + kAvgShift, rem != 0, f);
  }
  return negative ? -r : r;
}

}  // namespace conflux::reduce
