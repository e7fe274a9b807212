// An independent reference for the exact reductions (comm/src/reduce/exact_sum.h), written another
// way on purpose: the exact sum is a signed big integer (every double is an integer multiple of
// 2^-1074), and the result is found by searching the datatype's own codes, in order, for the one
// nearest to the exact value, comparing exactly (ties to the even code). No floating-point
// arithmetic decides anything. Slow (tens of microseconds per element): tests sample large arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "conflux/conflux.h"

namespace cfxtest {

// The element's bits (as stored, zero-extended) for each rank's input, in the datatype; returns the
// expected element's bits for cfxSumExact, or with `avg` for cfxAvgExact over `inputs.size()` ranks.
uint64_t exactReference(cfxDataType_t type, const std::vector<uint64_t>& inputs, bool avg);

// The value of a stored element as a double (exact for every floating-point datatype).
double elementValue(cfxDataType_t type, uint64_t bits);
// The stored bits of the datatype's value nearest to `v` (for building inputs; v is usually exact).
uint64_t elementBits(cfxDataType_t type, double v);
size_t elementSize(cfxDataType_t type);

// Inputs built to hurt, for `nranks` ranks: element i of rank r. Massive cancellation, subnormals,
// every exponent, ties at the rounding point, signed zeros, infinities and NaN, and random values.
uint64_t hurtfulInput(cfxDataType_t type, int nranks, int rank, size_t i);

}  // namespace cfxtest
