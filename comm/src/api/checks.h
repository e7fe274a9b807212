// Argument checks shared by the entry points. Each throws Error(kInvalidArgument) with a message
// that names the argument and its value; nothing has been queued or touched when one fails.
#pragma once

#include <cstddef>

#include "conflux/conflux.h"

namespace conflux::api {

void checkDatatype(cfxDataType_t type);
void checkOp(cfxRedOp_t op);
void checkRank(int rank, int nranks, const char* what);
// count * typeSize * multiplier in bytes, or an error if it overflows.
size_t checkedBytes(size_t count, cfxDataType_t type, size_t multiplier);
void checkBuffer(const void* p, size_t bytes, const char* name);
// Fails if [a, a+aBytes) and [b, b+bBytes) overlap, unless a == inPlaceA (the in-place convention).
void checkOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes, const void* inPlaceA,
                  const char* convention);
void checkStream(cfxStream_t stream);

}  // namespace conflux::api
