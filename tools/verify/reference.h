// Exact test values and expected results, independent of the library's own conversions.
//
// Inputs are small integers chosen so that every partial result is exact in every datatype,
// fp8 E5M2 included: sums of {-1, 0, 1} over at most 8 ranks, products of {2, -1, 1} (|p| <= 256),
// max/min of [-8, 8], and Avg inputs a + d_r with the d_r cancelling (so the mean is exactly a).
// Integer types wrap (an unsigned -1 is the type's maximum), and the expected value is computed
// with the same wrapping in that type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace cfxtest {

size_t typeSize(cfxDataType_t t);
const char* typeName(cfxDataType_t t);
const char* opName(cfxRedOp_t op);

// The input of `rank` at element `i` for a reduction with `op`.
int64_t inputValue(cfxRedOp_t op, int rank, int nranks, size_t i);
// Stores the integer `v` as datatype `t` at `p` (exact for the values above).
void encode(cfxDataType_t t, int64_t v, void* p);
// The expected reduction of `vals[0..n)` in datatype `t`, stored at `out`.
void expectedReduce(cfxDataType_t t, cfxRedOp_t op, const int64_t* vals, int n, void* out);

// Fills a buffer of `count` elements with inputValue(op, rank, nranks, offset + i).
void fillInputs(std::vector<uint8_t>& buf, size_t byteOffset, cfxDataType_t t, cfxRedOp_t op, int rank, int nranks,
                size_t firstIndex, size_t count);

// Compares `count` elements at got and want; returns "" or a description of the first mismatch.
std::string compare(const uint8_t* got, const uint8_t* want, size_t count, cfxDataType_t t, const std::string& what);

}  // namespace cfxtest
