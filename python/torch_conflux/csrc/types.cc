#include "types.h"

#include <c10/util/Exception.h>

namespace torch_conflux {

cfxDataType_t reductionType(const char* method, at::ScalarType dtype) {
  switch (dtype) {
    case at::kChar: return cfxInt8;
    case at::kByte: return cfxUint8;
    case at::kBool: return cfxUint8;
    case at::kInt: return cfxInt32;
    case at::kUInt32: return cfxUint32;
    case at::kLong: return cfxInt64;
    case at::kUInt64: return cfxUint64;
    case at::kHalf: return cfxFloat16;
    case at::kFloat: return cfxFloat32;
    case at::kDouble: return cfxFloat64;
    case at::kBFloat16: return cfxBfloat16;
    case at::kFloat8_e4m3fn: return cfxFloat8e4m3;
    case at::kFloat8_e5m2: return cfxFloat8e5m2;
    default: break;
  }
  TORCH_CHECK(false, "conflux ", method, ": reductions on dtype ", dtype,
              " are not supported (supported: float32, float64, float16, bfloat16, float8_e4m3fn, "
              "float8_e5m2, int8, uint8, int32, uint32, int64, uint64, bool)");
}

ReduceSpec reduceOp(const char* method, const c10d::ReduceOp& op, at::ScalarType dtype) {
  reductionType(method, dtype);  // throws for an unsupported dtype first
  const bool isBool = dtype == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return {isBool ? cfxMax : cfxSum};
    case c10d::ReduceOp::PRODUCT: return {isBool ? cfxMin : cfxProd};
    case c10d::ReduceOp::MIN: return {cfxMin};
    case c10d::ReduceOp::MAX: return {cfxMax};
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!isBool, "conflux ", method, ": ReduceOp.AVG is not defined for bool tensors");
      return {cfxAvg};
    case c10d::ReduceOp::PREMUL_SUM: {
      TORCH_CHECK(at::isFloatingType(dtype), "conflux ", method,
                  ": ReduceOp.PREMUL_SUM is defined for floating-point tensors only, got ", dtype);
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr, "conflux ", method, ": PREMUL_SUM without a factor");
      ReduceSpec spec{cfxSum, true, supplement->double_factor, supplement->tensor_factor};
      return spec;
    }
    default: break;
  }
  TORCH_CHECK(false, "conflux ", method, ": reduce op ", static_cast<int>(op.op_),
              " is not supported (SUM, AVG, PRODUCT, MIN, MAX and PREMUL_SUM are)");
}

at::Tensor premultiplied(const at::Tensor& t, const ReduceSpec& spec) {
  if (!spec.premul) return t;
  // float8 has no CPU arithmetic in torch: scale in float32 and round once back.
  const bool viaFloat = t.element_size() == 1;
  at::Tensor x = viaFloat ? t.to(at::kFloat) : t;
  x = spec.tensorFactor.defined() ? x.mul(spec.tensorFactor.to(x.device(), x.scalar_type())) : x.mul(spec.factor);
  return x.to(t.scalar_type()).contiguous();
}

void checkDense(const char* method, const at::Tensor& t) {
  TORCH_CHECK(t.defined(), "conflux ", method, ": undefined tensor");
  TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "conflux ", method,
              ": tensors must be on the CPU or a CUDA device, got one on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "conflux ", method, ": tensors must be dense (strided), got ",
              t.layout());
  TORCH_CHECK(t.is_contiguous(), "conflux ", method, ": tensors must be contiguous (call .contiguous())");
}

void checkSingle(const char* method, const std::vector<at::Tensor>& tensors) {
  TORCH_CHECK(tensors.size() == 1, "conflux ", method, ": expects exactly one tensor per call, got ",
              tensors.size());
  checkDense(method, tensors[0]);
}

bool onCuda(const char* method, const std::vector<at::Tensor>& tensors) {
  if (tensors.empty() || !tensors[0].defined()) return false;
  const at::Device device = tensors[0].device();
  for (const auto& t : tensors) {
    TORCH_CHECK(t.defined() && t.device() == device, "conflux ", method, ": tensors must be on one device, got ",
                device, " and ", t.defined() ? t.device().str() : std::string("an undefined tensor"));
  }
  return device.is_cuda();
}

void checkSameType(const char* method, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "conflux ", method, ": tensors must have one dtype, got ",
              a.scalar_type(), " and ", b.scalar_type());
}

void checkRank(const char* method, const char* what, int64_t rank, int size) {
  TORCH_CHECK(rank >= 0 && rank < size, "conflux ", method, ": ", what, " ", rank,
              " is not a rank of this group (size ", size, ")");
}

void checkList(const char* method, const std::vector<at::Tensor>& list, size_t expected, const at::Tensor& like) {
  TORCH_CHECK(list.size() == expected, "conflux ", method, ": expected a list of ", expected,
              " tensors, got ", list.size());
  for (const auto& t : list) {
    checkDense(method, t);
    checkSameType(method, t, like);
    TORCH_CHECK(t.numel() == like.numel(), "conflux ", method,
                ": every tensor of the list must have the input's number of elements (", like.numel(),
                "), got ", t.numel());
  }
}

bool sameSizes(const std::vector<at::Tensor>& list, const at::Tensor& like) {
  for (const auto& t : list) {
    if (t.numel() != like.numel()) return false;
  }
  return true;
}

void checkUnevenList(const char* method, const std::vector<at::Tensor>& list, size_t expected, int own,
                     const at::Tensor& like) {
  TORCH_CHECK(list.size() == expected, "conflux ", method, ": expected a list of ", expected,
              " tensors, got ", list.size());
  for (const auto& t : list) {
    checkDense(method, t);
    checkSameType(method, t, like);
  }
  TORCH_CHECK(list[own].numel() == like.numel(), "conflux ", method, ": this rank's own block (", own, ") has ",
              list[own].numel(), " elements, its tensor ", like.numel());
}

at::Tensor flatView(const std::vector<at::Tensor>& list, int64_t numel) {
  return at::from_blob(ptr(list[0]), {numel}, [keep = list[0]](void*) {}, list[0].options());
}

bool adjacent(const std::vector<at::Tensor>& list) {
  for (size_t i = 1; i < list.size(); ++i) {
    if (static_cast<char*>(ptr(list[i])) != static_cast<char*>(ptr(list[0])) + i * nbytes(list[0])) return false;
  }
  return true;
}

}  // namespace torch_conflux
