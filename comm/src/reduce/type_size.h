// Bytes per element of each datatype (0 for an invalid one). Header-only, so the libraries beside
// the core (the NCCL shim, the staged GPU path) use the same table.
#pragma once

#include <cstddef>

#include "conflux/conflux.h"

namespace conflux::reduce {

inline size_t dataTypeSize(cfxDataType_t type) {
  switch (type) {
    case cfxInt8: case cfxUint8: case cfxFloat8e4m3: case cfxFloat8e5m2: return 1;
    case cfxFloat16: case cfxBfloat16: return 2;
    case cfxInt32: case cfxUint32: case cfxFloat32: return 4;
    case cfxInt64: case cfxUint64: case cfxFloat64: return 8;
    default: return 0;
  }
}

}  // namespace conflux::reduce
