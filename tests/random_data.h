// Random inputs for the tests that compare two paths bitwise (registered_test.cc,
// single_copy_reduce_test.cc): any bits, but finite where the type is floating point.
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "reference.h"  // typeSize

namespace cfxtest {

// Random finite values: the bit just below each float type's sign is cleared, so the exponent is
// never all ones (no NaN or infinity in any input). The bytes come eight at a time from splitmix64
// (a byte per std::mt19937 draw was 80% of the 8-rank registered test's time).
inline std::vector<std::byte> randomData(cfxDataType_t t, size_t count, uint32_t seed) {
  const size_t es = typeSize(t);
  std::vector<std::byte> v(count * es);
  uint64_t state = 0x9e3779b97f4a7c15ull * (uint64_t{seed} + 1);
  for (size_t i = 0; i < v.size(); i += 8) {
    state += 0x9e3779b97f4a7c15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const size_t n = v.size() - i < 8 ? v.size() - i : 8;
    std::memcpy(v.data() + i, &z, n);
  }
  const bool isFloat = t == cfxFloat16 || t == cfxBfloat16 || t == cfxFloat32 || t == cfxFloat64 ||
                       t == cfxFloat8e4m3 || t == cfxFloat8e5m2;
  if (isFloat) {
    for (size_t i = 0; i < count; ++i) v[i * es + es - 1] &= std::byte{0xbf};
  }
  return v;
}

}  // namespace cfxtest
