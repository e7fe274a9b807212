// ncclRedOpCreatePreMulSum: ops that multiply each rank's input by a scalar, then sum. The shim
// multiplies into a scratch buffer (in the datatype's own arithmetic: integers wrap, fp16, bf16 and
// fp8 multiply exactly in fp32 and round once, which is what their native multiply gives) and runs
// Conflux's Sum on it, so results stay exact and identical on every rank.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "conflux/conflux.h"
#include "nccl_abi.h"

namespace cfx_nccl {

// Bytes per element; throws ShimError (ncclInvalidArgument) for an unknown datatype.
size_t elementSize(int datatype);

// Multiplies `count` elements of `in` by the scalar at `scalar` (one element of `datatype`).
void scale(void* out, const void* in, size_t count, int datatype, const void* scalar);

class PreMulTable {
 public:
  // Throws ShimError (ncclInvalidArgument) for a bad datatype, residence or NULL scalar.
  ncclRedOp_t create(const void* scalar, int datatype, ncclScalarResidence_t residence);
  void destroy(ncclRedOp_t op);

  struct Resolved {
    cfxRedOp_t op;
    const void* send;  // the caller's buffer, or the scaled copy in `scratch`
  };
  // A built-in op passes through; a PreMulSum op becomes Sum over a scaled copy of `send`. Throws
  // for an unknown op or a datatype other than the op's.
  Resolved resolve(ncclRedOp_t op, int datatype, const void* send, size_t count, std::vector<char>& scratch);

 private:
  struct Op {
    int datatype;
    ncclScalarResidence_t residence;
    const void* scalar;           // read at each call (ncclScalarDevice)
    alignas(8) unsigned char value[8];  // read once at creation (ncclScalarHostImmediate)
    bool live;
  };
  std::mutex mu_;
  std::vector<Op> ops_;
};

}  // namespace cfx_nccl
