#include "exact_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace cfxtest {
namespace {

// A floating-point format by its fields.
struct Format {
  int expBits, manBits, bias;
  bool hasInf;      // else (E4M3) the all-ones code is NaN and the rest are finite
  bool saturates;   // conversions to it saturate at the largest finite value (fp8)
  uint64_t maxCode;  // largest finite magnitude code
  uint64_t nanCode;  // the canonical NaN the library produces
};

Format formatOf(cfxDataType_t t) {
  switch (t) {
    case cfxFloat64: return {11, 52, 1023, true, false, 0x7fefffffffffffffull, 0x7ff8000000000000ull};
    case cfxFloat32: return {8, 23, 127, true, false, 0x7f7fffffull, 0x7fc00000ull};
    case cfxFloat16: return {5, 10, 15, true, false, 0x7bffull, 0x7e00ull};
    case cfxBfloat16: return {8, 7, 127, true, false, 0x7f7full, 0x7fc0ull};
    case cfxFloat8e4m3: return {4, 3, 7, false, true, 0x7eull, 0x7full};
    default: return {5, 2, 15, true, true, 0x7bull, 0x7full};  // cfxFloat8e5m2
  }
}

// Unsigned big integers, little-endian 32-bit digits.
using Big = std::vector<uint32_t>;

void trim(Big& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

Big shifted(uint64_t m, int shift) {  // m << shift
  Big r(static_cast<size_t>(shift / 32) + 4, 0);
  const unsigned __int128 v = static_cast<unsigned __int128>(m) << (shift % 32);
  for (int k = 0; k < 4; ++k) r[shift / 32 + k] = static_cast<uint32_t>(v >> (32 * k));
  trim(r);
  return r;
}

int compare(const Big& a, const Big& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

Big add(const Big& a, const Big& b) {
  Big r(std::max(a.size(), b.size()) + 1, 0);
  uint64_t c = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    c += (i < a.size() ? a[i] : 0u) + static_cast<uint64_t>(i < b.size() ? b[i] : 0u);
    r[i] = static_cast<uint32_t>(c);
    c >>= 32;
  }
  trim(r);
  return r;
}

Big sub(const Big& a, const Big& b) {  // a >= b
  Big r(a.size(), 0);
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t v = static_cast<int64_t>(a[i]) - (i < b.size() ? b[i] : 0u) - borrow;
    borrow = v < 0 ? 1 : 0;
    r[i] = static_cast<uint32_t>(v + (borrow << 32));
  }
  trim(r);
  return r;
}

Big mulSmall(const Big& a, uint32_t k) {
  Big r(a.size() + 1, 0);
  uint64_t c = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    c += static_cast<uint64_t>(a[i]) * k;
    r[i] = static_cast<uint32_t>(c);
    c >>= 32;
  }
  r[a.size()] = static_cast<uint32_t>(c);
  trim(r);
  return r;
}

struct Decoded {
  enum Kind { kFinite, kInf, kNan } kind;
  bool negative;
  Big magnitude;  // |value| * 2^1074
};

Decoded decode(const Format& f, uint64_t bits) {
  const int width = 1 + f.expBits + f.manBits;
  const bool neg = (bits >> (width - 1)) & 1u;
  const uint64_t mag = bits & ((uint64_t{1} << (width - 1)) - 1);
  const uint64_t e = mag >> f.manBits, m = mag & ((uint64_t{1} << f.manBits) - 1);
  const uint64_t emax = (uint64_t{1} << f.expBits) - 1;
  if (f.hasInf && e == emax) return {m == 0 ? Decoded::kInf : Decoded::kNan, neg, {}};
  if (!f.hasInf && mag > f.maxCode) return {Decoded::kNan, neg, {}};
  const uint64_t significand = e == 0 ? m : (m | (uint64_t{1} << f.manBits));
  const int e2 = static_cast<int>(e == 0 ? 1 : e) - f.bias - f.manBits;  // value = significand * 2^e2
  return {Decoded::kFinite, neg, shifted(significand, e2 + 1074)};
}

}  // namespace

size_t elementSize(cfxDataType_t type) {
  const Format f = formatOf(type);
  return static_cast<size_t>(1 + f.expBits + f.manBits) / 8;
}

uint64_t exactReference(cfxDataType_t type, const std::vector<uint64_t>& inputs, bool avg) {
  const Format f = formatOf(type);
  const int width = 1 + f.expBits + f.manBits;
  const uint64_t signBit = uint64_t{1} << (width - 1);
  bool nan = false, posInf = false, negInf = false, allNegZero = true;
  Big pos, neg;  // sums of the positive and of the negative inputs' magnitudes
  for (uint64_t in : inputs) {
    Decoded d = decode(f, in);
    if (d.kind == Decoded::kNan) nan = true;
    if (d.kind == Decoded::kInf) (d.negative ? negInf : posInf) = true;
    if (d.kind == Decoded::kFinite) (d.negative ? neg : pos) = add(d.negative ? neg : pos, d.magnitude);
    allNegZero = allNegZero && d.kind == Decoded::kFinite && d.negative && d.magnitude.empty();
  }
  if (nan || (posInf && negInf)) return f.nanCode;
  if (posInf || negInf) {
    const uint64_t s = negInf ? signBit : 0;
    return f.saturates ? (s | f.maxCode) : (s | (((uint64_t{1} << f.expBits) - 1) << f.manBits));
  }
  const int cmp = compare(pos, neg);
  if (cmp == 0) return allNegZero ? signBit : 0;
  const bool negative = cmp < 0;
  const Big target = negative ? sub(neg, pos) : sub(pos, neg);
  const uint32_t n = avg ? static_cast<uint32_t>(inputs.size()) : 1u;
  // value(code) * n, scaled as the target is.
  auto scaled = [&](uint64_t code) { return mulSmall(decode(f, code).magnitude, n); };
  // The largest code whose value * n <= target.
  uint64_t lo = 0, hi = f.maxCode;
  if (compare(scaled(hi), target) <= 0) {
    lo = hi;
  } else {
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      (compare(scaled(mid), target) <= 0 ? lo : hi) = mid;
    }
  }
  const uint64_t sign = negative ? signBit : 0;
  const Big below = scaled(lo);
  if (compare(below, target) == 0) return sign | lo;
  const Big twice = add(target, target);
  if (lo == f.maxCode) {  // past the largest value: the overflow threshold is max + ulp / 2
    // 2 * target >= 2 * max + ulp  <=>  target >= max + ulp / 2
    const Big twiceThreshold = add(add(below, below), sub(below, scaled(lo - 1)));
    if (compare(twice, twiceThreshold) >= 0) {
      return f.saturates ? (sign | f.maxCode) : (sign | (((uint64_t{1} << f.expBits) - 1) << f.manBits));
    }
    return sign | lo;
  }
  const int c = compare(twice, add(below, scaled(lo + 1)));
  if (c < 0) return sign | lo;
  if (c > 0) return sign | (lo + 1);
  return sign | ((lo & 1u) == 0 ? lo : lo + 1);
}

namespace {

// The value from the format's fields (the definition; fp8 has no C++ type to convert through).
double fieldValue(cfxDataType_t type, uint64_t bits) {
  const Format f = formatOf(type);
  const int width = 1 + f.expBits + f.manBits;
  const bool neg = (bits >> (width - 1)) & 1u;
  const uint64_t mag = bits & ((uint64_t{1} << (width - 1)) - 1);
  const uint64_t e = mag >> f.manBits, m = mag & ((uint64_t{1} << f.manBits) - 1);
  const uint64_t emax = (uint64_t{1} << f.expBits) - 1;
  double v;
  if ((f.hasInf && e == emax) || (!f.hasInf && mag > f.maxCode)) {
    v = (f.hasInf && m == 0) ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else {
    const uint64_t significand = e == 0 ? m : (m | (uint64_t{1} << f.manBits));
    v = std::ldexp(static_cast<double>(significand), static_cast<int>(e == 0 ? 1 : e) - f.bias - f.manBits);
  }
  return neg ? -v : v;
}

template <class T, class U>
double converted(uint64_t bits) {
  const auto u = static_cast<U>(bits);
  T x;
  std::memcpy(&x, &u, sizeof(T));
  return static_cast<double>(x);
}

}  // namespace

// The types the compiler has are converted through them (exact: every value of each is a double),
// fp8 from its fields: decoding every value from its fields (ldexp) was most of the exact tests'
// time. Every NaN reads as the quiet NaN of its sign, as fieldValue gives.
double elementValue(cfxDataType_t type, uint64_t bits) {
  double v;
  switch (type) {
    case cfxFloat64: v = converted<double, uint64_t>(bits); break;
    case cfxFloat32: v = converted<float, uint32_t>(bits); break;
    case cfxFloat16: v = converted<_Float16, uint16_t>(bits); break;
    case cfxBfloat16: v = converted<float, uint32_t>((bits & 0xffffu) << 16); break;
    default: return fieldValue(type, bits);
  }
  if (std::isnan(v)) return std::signbit(v) ? -std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::quiet_NaN();
  return v;
}

uint64_t elementBits(cfxDataType_t type, double v) {
  const Format f = formatOf(type);
  const int width = 1 + f.expBits + f.manBits;
  const uint64_t sign = std::signbit(v) ? uint64_t{1} << (width - 1) : 0;
  const double a = std::fabs(v);
  if (a != a) return f.nanCode;
  if (std::isinf(a) && f.hasInf) return sign | (((uint64_t{1} << f.expBits) - 1) << f.manBits);
  // The nearest code by search (value is increasing in the code); ties and rounding do not matter
  // for building inputs.
  uint64_t lo = 0, hi = f.maxCode;
  if (a >= elementValue(type, hi)) return sign | hi;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (elementValue(type, mid) <= a ? lo : hi) = mid;
  }
  return sign | (a - elementValue(type, lo) <= elementValue(type, lo + 1) - a ? lo : lo + 1);
}

namespace {

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t hurtfulInput(cfxDataType_t type, int nranks, int rank, size_t i) {
  const Format f = formatOf(type);
  const int width = 1 + f.expBits + f.manBits;
  const uint64_t signBit = uint64_t{1} << (width - 1);
  const uint64_t h = mix((static_cast<uint64_t>(type) << 56) ^ (static_cast<uint64_t>(nranks) << 48) ^
                         (static_cast<uint64_t>(rank) << 40) ^ i);
  // Only the first three patterns need these.
  const double maxv = i % 16 < 3 ? elementValue(type, f.maxCode) : 0;
  const double minSub = i % 16 < 3 ? elementValue(type, 1) : 0;
  const double halfUlpOfOne = std::ldexp(1.0, -(f.manBits + 1));
  switch (i % 16) {
    case 0:  // massive cancellation: big, small, -big, then zeros
      if (rank == 0) return elementBits(type, maxv / 4);
      if (rank == 1) return elementBits(type, 1.0 + (i % 7));
      if (rank == 2) return elementBits(type, -maxv / 4);
      return 0;
    case 1:  // a tie at the rounding point: 1 + ulp/2 rounds to even (1)
      if (rank == 0) return elementBits(type, 1.0);
      if (rank == 1) return elementBits(type, halfUlpOfOne);
      return 0;
    case 2:  // just past the tie: rounds up
      if (rank == 0) return elementBits(type, 1.0);
      if (rank == 1) return elementBits(type, halfUlpOfOne);
      return elementBits(type, minSub);
    case 3:  // subnormals of alternating sign
      return (rank % 2 ? signBit : 0) | static_cast<uint64_t>(1 + (h % 5));
    case 4: {  // every exponent: a power of two anywhere in the range
      const uint64_t e = 1 + h % ((uint64_t{1} << f.expBits) - 2);
      return (h >> 63 ? signBit : 0) | std::min<uint64_t>(e << f.manBits, f.maxCode);
    }
    case 5:  // signed zeros: all -0 at even i / 16, else mixed
      return (i / 16) % 2 == 0 || rank % 2 == 0 ? signBit : 0;
    case 6:  // specials now and then
      if ((i / 16) % 5 == 0 && rank == 0) return elementBits(type, std::numeric_limits<double>::infinity());
      if ((i / 16) % 5 == 1 && rank == nranks - 1) return f.nanCode;
      if ((i / 16) % 5 == 2) return elementBits(type, rank == 0 ? std::numeric_limits<double>::infinity()
                                                               : -std::numeric_limits<double>::infinity());
      return elementBits(type, 0.5);
    case 7:  // near overflow, all positive
      return f.maxCode - (h % 3);
    case 8:  // averages that tie: odd multiples of the smallest subnormal
      return static_cast<uint64_t>(1 + 2 * (h % 3));
    default: {  // random codes: any finite value (mostly moderate exponents, so the fast path runs too)
      uint64_t code = h % (f.maxCode + 1);
      if (i % 16 < 13) {
        const uint64_t mid = static_cast<uint64_t>(f.bias) << f.manBits;  // 1.0
        const uint64_t span = static_cast<uint64_t>(std::min(f.bias, 6)) << f.manBits;
        code = mid - span + h % (2 * span);
      }
      return ((h >> 62) & 1 ? signBit : 0) | code;
    }
  }
}

}  // namespace cfxtest
