#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace cfxtest {

namespace {

// An fp8 decoder written from the OCP definitions (not the library's code).
double fp8Value(uint8_t code, int mantissaBits, int bias, bool e4m3) {
  int sign = code >> 7, e = (code >> mantissaBits) & ((1 << (7 - mantissaBits)) - 1);
  int m = code & ((1 << mantissaBits) - 1);
  if (e4m3 && (code & 0x7f) == 0x7f) return NAN;
  if (!e4m3 && e == 31) return m ? NAN : INFINITY;
  double v = e == 0 ? std::ldexp(m, 1 - bias - mantissaBits) : std::ldexp((1 << mantissaBits) + m, e - bias - mantissaBits);
  return sign ? -v : v;
}

// The non-negative finite values of an fp8 format, by code: codes 0 up to the largest finite one
// are in increasing order of value.
struct Fp8Values {
  double value[128];
  int finite = 0;
};

Fp8Values fp8Values(bool e4m3) {
  Fp8Values t;
  for (int c = 0; c < 128; ++c) {
    const double v = fp8Value(static_cast<uint8_t>(c), e4m3 ? 3 : 2, e4m3 ? 7 : 15, e4m3);
    if (!std::isfinite(v)) break;
    t.value[t.finite++] = v;
  }
  return t;
}

// The code of v, which must be exact in the format; zero (either sign) is code 0. A binary search
// of the decoded values (a search of all 256 codes, decoding each, was most of an 8-rank fp8
// test's time).
uint8_t fp8Code(double v, bool e4m3) {
  static const Fp8Values kE4M3 = fp8Values(true), kE5M2 = fp8Values(false);
  const Fp8Values& t = e4m3 ? kE4M3 : kE5M2;
  const double a = std::fabs(v);
  const double* end = t.value + t.finite;
  const double* p = std::lower_bound(t.value, end, a);
  if (p == end || *p != a) throw std::runtime_error("value not exact in fp8: " + std::to_string(v));
  const auto code = static_cast<uint8_t>(p - t.value);
  return v < 0 ? static_cast<uint8_t>(code | 0x80) : code;
}

template <class T>
void store(T v, void* p) {
  std::memcpy(p, &v, sizeof(T));
}

template <class T>
void intReduce(cfxRedOp_t op, const int64_t* vals, int n, void* out) {
  using U = std::make_unsigned_t<T>;
  T acc = static_cast<T>(static_cast<U>(vals[0]));
  for (int r = 1; r < n; ++r) {
    T x = static_cast<T>(static_cast<U>(vals[r]));
    switch (op) {
      case cfxSum:
      case cfxAvg: acc = static_cast<T>(static_cast<U>(static_cast<U>(acc) + static_cast<U>(x))); break;
      case cfxProd: acc = static_cast<T>(static_cast<U>(static_cast<U>(acc) * static_cast<U>(x))); break;
      case cfxMax: acc = acc < x ? x : acc; break;
      case cfxMin: acc = x < acc ? x : acc; break;
      default: break;
    }
  }
  if (op == cfxAvg) acc = static_cast<T>(acc / static_cast<T>(n));
  store<T>(acc, out);
}

}  // namespace

size_t typeSize(cfxDataType_t t) {
  static const size_t kSizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return kSizes[t];
}

const char* typeName(cfxDataType_t t) {
  static const char* const kNames[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                       "half", "float", "double", "bf16", "e4m3", "e5m2"};
  return kNames[t];
}

const char* opName(cfxRedOp_t op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg"};
  return kNames[op];
}

int64_t inputValue(cfxRedOp_t op, int rank, int nranks, size_t i) {
  switch (op) {
    case cfxSum: return static_cast<int64_t>((rank + i) % 2) - (i % 3 == 0 ? 1 : 0);
    case cfxProd: return (rank + i) % 3 == 0 ? 2 : ((rank + 2 * i) % 5 == 0 ? -1 : 1);
    case cfxMax:
    case cfxMin: return static_cast<int64_t>((rank * 37 + i * 11) % 17) - 8;
    case cfxAvg: {
      int64_t a = 1 + static_cast<int64_t>(i % 4);
      int64_t d = (nranks % 2 == 1 && rank == nranks - 1) ? 0 : (rank % 2 == 0 ? 1 : -1);
      return a + d;
    }
    default: return 0;
  }
}

void encode(cfxDataType_t t, int64_t v, void* p) {
  switch (t) {
    case cfxInt8: store(static_cast<int8_t>(static_cast<uint8_t>(v)), p); break;
    case cfxUint8: store(static_cast<uint8_t>(v), p); break;
    case cfxInt32: store(static_cast<int32_t>(static_cast<uint32_t>(v)), p); break;
    case cfxUint32: store(static_cast<uint32_t>(v), p); break;
    case cfxInt64: store(v, p); break;
    case cfxUint64: store(static_cast<uint64_t>(v), p); break;
    case cfxFloat16: store(static_cast<_Float16>(static_cast<float>(v)), p); break;
    case cfxFloat32: store(static_cast<float>(v), p); break;
    case cfxFloat64: store(static_cast<double>(v), p); break;
    case cfxBfloat16: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (u & 0xffff) throw std::runtime_error("value not exact in bf16");
      store(static_cast<uint16_t>(u >> 16), p);
      break;
    }
    case cfxFloat8e4m3: store(fp8Code(static_cast<double>(v), true), p); break;
    case cfxFloat8e5m2: store(fp8Code(static_cast<double>(v), false), p); break;
    default: throw std::runtime_error("bad type");
  }
}

void expectedReduce(cfxDataType_t t, cfxRedOp_t op, const int64_t* vals, int n, void* out) {
  switch (t) {
    case cfxInt8: return intReduce<int8_t>(op, vals, n, out);
    case cfxUint8: return intReduce<uint8_t>(op, vals, n, out);
    case cfxInt32: return intReduce<int32_t>(op, vals, n, out);
    case cfxUint32: return intReduce<uint32_t>(op, vals, n, out);
    case cfxInt64: return intReduce<int64_t>(op, vals, n, out);
    case cfxUint64: return intReduce<uint64_t>(op, vals, n, out);
    default: break;
  }
  // Floating types: the inputs are small integers, so the exact result is an integer too.
  int64_t acc = vals[0];
  for (int r = 1; r < n; ++r) {
    switch (op) {
      case cfxSum: case cfxAvg: acc += vals[r]; break;
      case cfxProd: acc *= vals[r]; break;
      case cfxMax: acc = std::max(acc, vals[r]); break;
      case cfxMin: acc = std::min(acc, vals[r]); break;
      default: break;
    }
  }
  if (op == cfxAvg) acc /= n;  // exact by construction
  encode(t, acc, out);
}

void fillInputs(std::vector<uint8_t>& buf, size_t byteOffset, cfxDataType_t t, cfxRedOp_t op, int rank, int nranks,
                size_t firstIndex, size_t count) {
  size_t es = typeSize(t);
  // Encoding goes through a small cache: inputs take few distinct values.
  int64_t lastV = INT64_MIN;
  uint8_t enc[8];
  for (size_t i = 0; i < count; ++i) {
    int64_t v = inputValue(op, rank, nranks, firstIndex + i);
    if (v != lastV) {
      encode(t, v, enc);
      lastV = v;
    }
    std::memcpy(buf.data() + byteOffset + i * es, enc, es);
  }
}

std::string compare(const uint8_t* got, const uint8_t* want, size_t count, cfxDataType_t t, const std::string& what) {
  size_t es = typeSize(t);
  if (count == 0 || std::memcmp(got, want, count * es) == 0) return "";
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * es, want + i * es, es) != 0) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, got + i * es, es);
      std::memcpy(&w, want + i * es, es);
      char buf[160];
      std::snprintf(buf, sizeof(buf), " element %zu: got 0x%llx, want 0x%llx", i, static_cast<unsigned long long>(g),
                    static_cast<unsigned long long>(w));
      return what + buf;
    }
  }
  return "";
}

}  // namespace cfxtest
