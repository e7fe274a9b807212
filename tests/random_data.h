// Random inputs for the tests that compare two paths bitwise (registered_test.cc,
// single_copy_reduce_test.cc): any bits, but finite where the type is floating point.
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "reference.h"  // typeSize

namespace cfxtest {

// Random finite values: the bit just below each float type's sign is cleared, so the exponent is
// never all ones (no NaN or infinity in any input).
inline std::vector<std::byte> randomData(cfxDataType_t t, size_t count, uint32_t seed) {
  const size_t es = typeSize(t);
  std::vector<std::byte> v(count * es);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  const bool isFloat = t == cfxFloat16 || t == cfxBfloat16 || t == cfxFloat32 || t == cfxFloat64 ||
                       t == cfxFloat8e4m3 || t == cfxFloat8e5m2;
  if (isFloat) {
    for (size_t i = 0; i < count; ++i) v[i * es + es - 1] &= std::byte{0xbf};
  }
  return v;
}

}  // namespace cfxtest
