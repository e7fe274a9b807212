#include "premul.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "reduce/float_formats.h"
#include "reduce/type_size.h"
#include "shim.h"

namespace cfx_nccl {

namespace {

namespace fmt = conflux::reduce;

}  // namespace

size_t elementSize(int datatype) {
  const size_t size = conflux::reduce::dataTypeSize(static_cast<cfxDataType_t>(datatype));
  if (size == 0) throw ShimError(ncclInvalidArgument, "invalid datatype " + std::to_string(datatype));
  return size;
}

namespace {

template <class T>
T load(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void store(void* p, size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}

// Integers multiply modulo 2^bits (in the unsigned type, so signed overflow is defined).
template <class T, class U>
void scaleInt(void* out, const void* in, size_t n, const void* s) {
  const U k = static_cast<U>(load<T>(s, 0));
  for (size_t i = 0; i < n; ++i) store<T>(out, i, static_cast<T>(static_cast<U>(load<T>(in, i)) * k));
}

template <class T>
void scaleNative(void* out, const void* in, size_t n, const void* s) {
  const T k = load<T>(s, 0);
  for (size_t i = 0; i < n; ++i) store<T>(out, i, load<T>(in, i) * k);
}

// Narrow floats: decode to fp32, multiply (exact there), round once.
template <class Bits, class Dec, class Enc>
void scaleNarrow(void* out, const void* in, size_t n, const void* s, Dec dec, Enc enc) {
  const float k = dec(load<Bits>(s, 0));
  for (size_t i = 0; i < n; ++i) store<Bits>(out, i, enc(dec(load<Bits>(in, i)) * k));
}

}  // namespace

void scale(void* out, const void* in, size_t n, int datatype, const void* s) {
  switch (datatype) {
    case cfxInt8: return scaleInt<int8_t, uint8_t>(out, in, n, s);
    case cfxUint8: return scaleInt<uint8_t, uint8_t>(out, in, n, s);
    case cfxInt32: return scaleInt<int32_t, uint32_t>(out, in, n, s);
    case cfxUint32: return scaleInt<uint32_t, uint32_t>(out, in, n, s);
    case cfxInt64: return scaleInt<int64_t, uint64_t>(out, in, n, s);
    case cfxUint64: return scaleInt<uint64_t, uint64_t>(out, in, n, s);
    case cfxFloat32: return scaleNative<float>(out, in, n, s);
    case cfxFloat64: return scaleNative<double>(out, in, n, s);
    case cfxFloat16: return scaleNarrow<uint16_t>(out, in, n, s, fmt::halfBitsToFloat, fmt::floatToHalfBits);
    case cfxBfloat16: return scaleNarrow<uint16_t>(out, in, n, s, fmt::bf16ToFloat, fmt::floatToBf16);
    case cfxFloat8e4m3:
      return scaleNarrow<uint8_t>(out, in, n, s, [](uint8_t c) { return fmt::fp8ToFloat(c, fmt::kE4M3); },
                                  [](float f) { return fmt::fp8Encode(f, fmt::kE4M3); });
    case cfxFloat8e5m2:
      return scaleNarrow<uint8_t>(out, in, n, s, [](uint8_t c) { return fmt::fp8ToFloat(c, fmt::kE5M2); },
                                  [](float f) { return fmt::fp8Encode(f, fmt::kE5M2); });
    default: throw ShimError(ncclInvalidArgument, "invalid datatype " + std::to_string(datatype));
  }
}

ncclRedOp_t PreMulTable::create(const void* scalar, int datatype, ncclScalarResidence_t residence) {
  const size_t size = elementSize(datatype);
  if (scalar == nullptr) throw ShimError(ncclInvalidArgument, "scalar is NULL");
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    throw ShimError(ncclInvalidArgument, "invalid residence " + std::to_string(residence));
  }
  Op op{datatype, residence, scalar, {}, true};
  if (residence == ncclScalarHostImmediate) std::memcpy(op.value, scalar, size);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (!ops_[i].live) {
      ops_[i] = op;
      return ncclNumOps + static_cast<int>(i);
    }
  }
  ops_.push_back(op);
  return ncclNumOps + static_cast<int>(ops_.size() - 1);
}

void PreMulTable::destroy(ncclRedOp_t op) {
  std::lock_guard<std::mutex> lock(mu_);
  const long i = static_cast<long>(op) - ncclNumOps;
  if (op < ncclNumOps) throw ShimError(ncclInvalidArgument, "op " + std::to_string(op) + " is a built-in op");
  if (i >= static_cast<long>(ops_.size()) || !ops_[i].live) {
    throw ShimError(ncclInvalidArgument, "op " + std::to_string(op) + " was not created on this communicator");
  }
  ops_[i].live = false;
}

PreMulTable::Resolved PreMulTable::resolve(ncclRedOp_t op, int datatype, const void* send, size_t count,
                                           std::vector<char>& scratch) {
  if (op >= 0 && op < ncclNumOps) return {static_cast<cfxRedOp_t>(op), send};
  Op found;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const long i = static_cast<long>(op) - ncclNumOps;
    if (op < 0 || i >= static_cast<long>(ops_.size()) || !ops_[i].live) {
      throw ShimError(ncclInvalidArgument, "invalid op " + std::to_string(op));
    }
    found = ops_[i];
  }
  if (found.datatype != datatype) {
    throw ShimError(ncclInvalidArgument, "op " + std::to_string(op) + " was created for datatype " +
                                             std::to_string(found.datatype) + ", not " + std::to_string(datatype));
  }
  if (count == 0) return {cfxSum, send};
  if (send == nullptr) throw ShimError(ncclInvalidArgument, "sendbuff is NULL");
  scratch.resize(count * elementSize(datatype));
  scale(scratch.data(), send, count, datatype, found.residence == ncclScalarHostImmediate ? found.value : found.scalar);
  return {cfxSum, scratch.data()};
}

}  // namespace cfx_nccl
