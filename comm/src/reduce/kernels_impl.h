// The kernel templates. Included by one translation unit per instruction set; everything here has
// internal linkage so copies compiled with different -m flags can never be mixed by the linker.
#pragma once

#include <cstdint>
#include <type_traits>

#include "reduce/float_formats.h"
#include "reduce/kernels.h"

namespace conflux::reduce {
namespace {

// How a stored element is loaded into its accumulator type and stored back.
template <class T>
struct IntTraits {
  using Store = T;
  using Acc = T;
  static Acc load(Store v) { return v; }
  static Store store(Acc v) { return v; }
};
template <class T, class A>
struct FloatTraits {
  using Store = T;
  using Acc = A;
  static Acc load(Store v) { return static_cast<Acc>(v); }
  static Store store(Acc v) { return static_cast<Store>(v); }
};
struct Bf16Traits {
  using Store = uint16_t;
  using Acc = float;
  static Acc load(Store v) { return bf16ToFloat(v); }
  static Store store(Acc v) { return floatToBf16(v); }
};
template <bool E4M3>
struct Fp8Traits {
  using Store = uint8_t;
  using Acc = float;
  static Acc load(Store v) { return fp8Table(E4M3 ? kE4M3 : kE5M2)[v]; }
  static Store store(Acc v) { return fp8Encode(v, E4M3 ? kE4M3 : kE5M2); }
};

template <class A>
A combine(A a, A b, cfxRedOp_t op) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    switch (op) {
      case cfxProd: return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case cfxMax: return a < b ? b : a;
      case cfxMin: return b < a ? b : a;
      default: return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  } else {
    switch (op) {
      case cfxProd: return a * b;
      case cfxMax: return a < b ? b : a;
      case cfxMin: return b < a ? b : a;
      default: return a + b;
    }
  }
}

// One kernel: accumulates a block in registers/stack in the accumulator type, then stores once.
template <class Tr, cfxRedOp_t Op>
void reduceKernel(void* dstv, const void* const* srcsv, int nsrc, size_t count, int divisor) {
  using S = typename Tr::Store;
  using A = typename Tr::Acc;
  constexpr size_t kBlock = 512;
  S* dst = static_cast<S*>(dstv);
  A acc[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = count - base < kBlock ? count - base : kBlock;
    const S* s0 = static_cast<const S*>(srcsv[0]) + base;
    for (size_t i = 0; i < n; ++i) acc[i] = Tr::load(s0[i]);
    for (int k = 1; k < nsrc; ++k) {
      const S* sk = static_cast<const S*>(srcsv[k]) + base;
      for (size_t i = 0; i < n; ++i) acc[i] = combine<A>(acc[i], Tr::load(sk[i]), Op);
    }
    if constexpr (Op == cfxAvg) {
      if constexpr (std::is_integral_v<A>) {
        A d = static_cast<A>(divisor);
        for (size_t i = 0; i < n; ++i) acc[i] = static_cast<A>(acc[i] / d);
      } else {
        A d = static_cast<A>(divisor);
        for (size_t i = 0; i < n; ++i) acc[i] = acc[i] / d;
      }
    }
    S* out = dst + base;
    for (size_t i = 0; i < n; ++i) out[i] = Tr::store(acc[i]);
  }
}

template <class Tr>
void fillRow(ReduceFn* row) {
  row[cfxSum] = &reduceKernel<Tr, cfxSum>;
  row[cfxProd] = &reduceKernel<Tr, cfxProd>;
  row[cfxMax] = &reduceKernel<Tr, cfxMax>;
  row[cfxMin] = &reduceKernel<Tr, cfxMin>;
  row[cfxAvg] = &reduceKernel<Tr, cfxAvg>;
}

KernelTable buildTable(const char* isa) {
  KernelTable t{};
  t.isa = isa;
  fillRow<IntTraits<int8_t>>(t.fn[cfxInt8]);
  fillRow<IntTraits<uint8_t>>(t.fn[cfxUint8]);
  fillRow<IntTraits<int32_t>>(t.fn[cfxInt32]);
  fillRow<IntTraits<uint32_t>>(t.fn[cfxUint32]);
  fillRow<IntTraits<int64_t>>(t.fn[cfxInt64]);
  fillRow<IntTraits<uint64_t>>(t.fn[cfxUint64]);
  fillRow<FloatTraits<_Float16, float>>(t.fn[cfxFloat16]);
  fillRow<FloatTraits<float, float>>(t.fn[cfxFloat32]);
  fillRow<FloatTraits<double, double>>(t.fn[cfxFloat64]);
  fillRow<Bf16Traits>(t.fn[cfxBfloat16]);
  fillRow<Fp8Traits<true>>(t.fn[cfxFloat8e4m3]);
  fillRow<Fp8Traits<false>>(t.fn[cfxFloat8e5m2]);
  return t;
}

}  // namespace
}  // namespace conflux::reduce
