// How torch's tensors, dtypes and reduce ops map onto Conflux's C API, and the argument checks
// every method makes before anything is queued. A failed check throws c10::Error (RuntimeError in
// Python) naming the method; nothing has been sent, and the process group stays usable.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace torch_conflux {

// The Conflux datatype of a reduction over `dtype`, or throws naming `method`. Bool reduces as
// uint8 (see reduceOp); the float8 types are e4m3fn and e5m2 (the "fnuz" variants are other
// formats and are refused).
cfxDataType_t reductionType(const char* method, at::ScalarType dtype);

// A reduce op on `dtype` as a Conflux op plus an optional premultiplier (PREMUL_SUM: each rank's
// input is scaled by the factor before a SUM). Bool: SUM is MAX (logical or), PRODUCT is MIN
// (logical and), as NCCL's backend does. Bitwise ops, AVG on bool: throw naming `method`.
struct ReduceSpec {
  cfxRedOp_t op;
  bool premul = false;
  double factor = 1.0;
  at::Tensor tensorFactor;  // PREMUL_SUM with a tensor factor (a one-element tensor)
};
ReduceSpec reduceOp(const char* method, const c10d::ReduceOp& op, at::ScalarType dtype);

// Input for a reduction: `t` itself, or `t` times the PREMUL_SUM factor in a new tensor.
at::Tensor premultiplied(const at::Tensor& t, const ReduceSpec& spec);

// Argument checks. Each throws c10::Error whose text starts with "conflux <method>: ".
// checkDense: defined, strided, contiguous, on the CPU or a CUDA device.
void checkDense(const char* method, const at::Tensor& t);
// True when every tensor is on a CUDA device (one device), false when every one is on the CPU;
// throws for a mix.
bool onCuda(const char* method, const std::vector<at::Tensor>& tensors);
void checkSingle(const char* method, const std::vector<at::Tensor>& tensors);
void checkSameType(const char* method, const at::Tensor& a, const at::Tensor& b);
void checkRank(const char* method, const char* what, int64_t rank, int size);
void checkList(const char* method, const std::vector<at::Tensor>& list, size_t expected, const at::Tensor& like);
// Whether every tensor of the list has like's number of elements.
bool sameSizes(const std::vector<at::Tensor>& list, const at::Tensor& like);
// A list of `expected` dense tensors of like's type whose entry `own` has like's number of elements
// (the uneven forms of all_gather and reduce_scatter).
void checkUnevenList(const char* method, const std::vector<at::Tensor>& list, size_t expected, int own,
                     const at::Tensor& like);

// Bytes of a tensor (data movement sends any dtype as bytes).
inline size_t nbytes(const at::Tensor& t) { return t.numel() * t.element_size(); }
inline void* ptr(const at::Tensor& t) { return t.data_ptr(); }

// One flat tensor over a list that lies back to back, keeping the list's storage alive.
at::Tensor flatView(const std::vector<at::Tensor>& list, int64_t numel);
// True when `list` lies back to back in one contiguous block (the library can use it directly).
bool adjacent(const std::vector<at::Tensor>& list);

}  // namespace torch_conflux
