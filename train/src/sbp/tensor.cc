#include "tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace conflux::train::sbp {

std::string toString(const Layout& l) {
  switch (l.kind) {
    case Layout::Kind::kSplit: return "S(" + std::to_string(l.dim) + ")";
    case Layout::Kind::kBroadcast: return "B";
    case Layout::Kind::kPartialSum: return "P";
    case Layout::Kind::kPartialMax: return "Pmax";
    case Layout::Kind::kPartialMin: return "Pmin";
  }
  return "?";
}

std::string toString(const Signature& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + toString(s[i]);
  return out + ")";
}

Range splitRange(int64_t length, int parts, int index) {
  const int64_t q = length / parts, r = length % parts;
  Range g;
  g.begin = index * q + std::min<int64_t>(index, r);
  g.end = g.begin + q + (index < r ? 1 : 0);
  return g;
}

Shape localShape(const Shape& shape, const Signature& sig, const std::vector<int>& mesh, const std::vector<int>& coords) {
  Shape s = shape;
  for (size_t k = 0; k < sig.size(); ++k) s = applyLayout(s, sig[k], mesh[k], coords[k]);
  return s;
}

int64_t elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape splitShape(const Shape& shape, int dim, int parts, int index) {
  Shape out = shape;
  out[dim] = splitRange(shape[dim], parts, index).size();
  return out;
}

Shape applyLayout(const Shape& shape, const Layout& l, int parts, int index) {
  return l.isSplit() ? splitShape(shape, l.dim, parts, index) : shape;
}

void copyRows(const void* src, const Shape& srcShape, void* dst, const Shape& dstShape, int dim, int64_t srcRow,
              int64_t dstRow, int64_t rows, size_t elemBytes) {
  if (rows <= 0) return;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= srcShape[d];
  for (size_t d = dim + 1; d < srcShape.size(); ++d) inner *= srcShape[d];
  const size_t rowBytes = static_cast<size_t>(inner) * elemBytes;
  const auto* s = static_cast<const std::byte*>(src);
  auto* t = static_cast<std::byte*>(dst);
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte* from = s + (static_cast<size_t>(o * srcShape[dim] + srcRow)) * rowBytes;
    std::byte* to = t + (static_cast<size_t>(o * dstShape[dim] + dstRow)) * rowBytes;
    std::memcpy(to, from, static_cast<size_t>(rows) * rowBytes);
  }
}

namespace {

template <typename T>
void fillWith(void* dst, int64_t count, T v) {
  auto* p = static_cast<std::byte*>(dst);
  for (int64_t i = 0; i < count; ++i) std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

template <typename T>
void fillLimits(void* dst, int64_t count, bool lowest) {
  fillWith<T>(dst, count, lowest ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
}

template <typename T>
void fillInfinity(void* dst, int64_t count, bool negative) {
  const T inf = std::numeric_limits<T>::infinity();
  fillWith<T>(dst, count, negative ? -inf : inf);
}

}  // namespace

void fillIdentity(void* dst, int64_t count, cfxDataType_t dtype, Layout::Kind kind) {
  if (count <= 0) return;
  if (kind == Layout::Kind::kPartialSum) {
    std::memset(dst, 0, static_cast<size_t>(count) * dtypeBytes(dtype));
    return;
  }
  const bool lowest = kind == Layout::Kind::kPartialMax;
  switch (dtype) {
    case cfxInt8: return fillLimits<int8_t>(dst, count, lowest);
    case cfxUint8: return fillLimits<uint8_t>(dst, count, lowest);
    case cfxInt32: return fillLimits<int32_t>(dst, count, lowest);
    case cfxUint32: return fillLimits<uint32_t>(dst, count, lowest);
    case cfxInt64: return fillLimits<int64_t>(dst, count, lowest);
    case cfxUint64: return fillLimits<uint64_t>(dst, count, lowest);
    case cfxFloat32: return fillInfinity<float>(dst, count, lowest);
    case cfxFloat64: return fillInfinity<double>(dst, count, lowest);
    case cfxFloat16: return fillWith<uint16_t>(dst, count, lowest ? 0xFC00 : 0x7C00);   // -inf / +inf
    case cfxBfloat16: return fillWith<uint16_t>(dst, count, lowest ? 0xFF80 : 0x7F80);  // -inf / +inf
    case cfxFloat8e4m3: return fillWith<uint8_t>(dst, count, lowest ? 0xFE : 0x7E);     // -448 / 448
    case cfxFloat8e5m2: return fillWith<uint8_t>(dst, count, lowest ? 0xFC : 0x7C);     // -inf / +inf
    default: throw Error(cfxInvalidArgument, "sbp: unknown datatype " + std::to_string(static_cast<int>(dtype)));
  }
}

}  // namespace conflux::train::sbp
