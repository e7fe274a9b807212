// Integer arithmetic written once: ceiling division, rounding up to a multiple, and the largest
// power of two in a count.
#pragma once

#include <bit>
#include <type_traits>

namespace conflux {

// ceil(a / b) for a >= 0, b > 0.
template <class T>
constexpr T ceilDiv(T a, T b) {
  static_assert(std::is_integral_v<T>);
  return (a + b - 1) / b;
}

// The smallest multiple of `a` (> 0) that is at least x.
template <class T>
constexpr T roundUp(T x, T a) {
  return ceilDiv(x, a) * a;
}

// The largest power of two <= n, for n >= 1 (1 for n < 1).
constexpr int largestPowerOfTwo(int n) { return n <= 1 ? 1 : static_cast<int>(std::bit_floor(static_cast<unsigned>(n))); }

}  // namespace conflux
