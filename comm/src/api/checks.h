// Argument checks shared by the entry points. Each throws Error(kInvalidArgument) with a message
// that names the argument and its value; nothing has been queued or touched when one fails.
//
// The tests are inline, in every entry point; only the messages are built out of line (cold), so
// a valid call pays a compare and a branch per check, not a call (about 20 instructions each on
// the latency path's calls: perf/RESULTS.md, 2026-12-04).
#pragma once

#include <cstddef>
#include <cstdint>

#include "conflux/conflux.h"
#include "reduce/type_size.h"

namespace conflux::api {

// The failures, each with its message.
[[noreturn, gnu::cold]] void invalidDatatype(cfxDataType_t type);
[[noreturn, gnu::cold]] void invalidOp(cfxRedOp_t op);
[[noreturn, gnu::cold]] void invalidRank(int rank, int nranks, const char* what);
[[noreturn, gnu::cold]] void overflowingCount(size_t count, cfxDataType_t type);
[[noreturn, gnu::cold]] void nullBuffer(const char* name);
[[noreturn, gnu::cold]] void overlappingBuffers(const char* convention);
// Throws unless `stream` (not NULL) came from cfxStreamCreate.
void checkStreamHandle(cfxStream_t stream);

inline void checkDatatype(cfxDataType_t type) {
  if (static_cast<unsigned>(type) >= static_cast<unsigned>(cfxNumTypes)) [[unlikely]] invalidDatatype(type);
}

inline void checkOp(cfxRedOp_t op) {
  if (static_cast<unsigned>(op) >= static_cast<unsigned>(cfxNumOps) && op != cfxSumExact && op != cfxAvgExact)
      [[unlikely]] {
    invalidOp(op);
  }
}

inline void checkRank(int rank, int nranks, const char* what) {
  if (rank < 0 || rank >= nranks) [[unlikely]] invalidRank(rank, nranks, what);
}

// count * typeSize * multiplier in bytes, or an error if it overflows.
inline size_t checkedBytes(size_t count, cfxDataType_t type, size_t multiplier) {
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, reduce::dataTypeSize(type), &bytes) ||
      __builtin_mul_overflow(bytes, multiplier, &bytes) || bytes > (SIZE_MAX >> 1)) [[unlikely]] {
    overflowingCount(count, type);
  }
  return bytes;
}

inline void checkBuffer(const void* p, size_t bytes, const char* name) {
  if (p == nullptr && bytes > 0) [[unlikely]] nullBuffer(name);
}

// Fails if [a, a+aBytes) and [b, b+bBytes) overlap, unless a == inPlaceA (the in-place convention).
inline void checkOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes, const void* inPlaceA,
                         const char* convention) {
  if (a == nullptr || b == nullptr || aBytes == 0 || bBytes == 0 || a == inPlaceA) return;
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  if (pa < pb + bBytes && pb < pa + aBytes) [[unlikely]] overlappingBuffers(convention);
}

inline void checkStream(cfxStream_t stream) {
  if (stream != nullptr) checkStreamHandle(stream);
}

}  // namespace conflux::api
