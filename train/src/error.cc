#include "conflux/train/error.h"

namespace conflux::train {

void check(cfxResult_t result, const char* what, cfxComm_t comm) {
  if (result == cfxSuccess) return;
  std::string msg = std::string(what) + " failed (" + cfxGetErrorString(result) + ")";
  const char* detail = cfxGetLastError(comm);
  // Group calls record their error on the calling thread rather than on one communicator.
  if ((detail == nullptr || *detail == '\0') && comm != nullptr) detail = cfxGetLastError(nullptr);
  if (detail != nullptr && *detail != '\0') msg += ": " + std::string(detail);
  throw Error(result, msg);
}

size_t dtypeBytes(cfxDataType_t dtype) {
  switch (dtype) {
    case cfxInt8: case cfxUint8: case cfxFloat8e4m3: case cfxFloat8e5m2: return 1;
    case cfxFloat16: case cfxBfloat16: return 2;
    case cfxInt32: case cfxUint32: case cfxFloat32: return 4;
    case cfxInt64: case cfxUint64: case cfxFloat64: return 8;
    default: break;
  }
  throw Error(cfxInvalidArgument, "unknown datatype " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace conflux::train
