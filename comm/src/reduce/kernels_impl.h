// The kernel templates. Included by one translation unit per instruction set; everything here has
// internal linkage so copies compiled with different -m flags can never be mixed by the linker.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "reduce/exact_impl.h"
#include "reduce/float_formats.h"
#include "reduce/fp8_simd.h"
#include "reduce/kernels.h"
#include "reduce/narrow_simd.h"

namespace conflux::reduce {
namespace {

// How a stored element is loaded into its accumulator type and stored back.
// Integers, float and double accumulate in their own type.
template <class T>
struct PlainTraits {
  using Store = T;
  using Acc = T;
  static Acc load(Store v) { return v; }
  static Store store(Acc v) { return v; }
};
// fp16 and bf16 have kernels with conversion instructions where the instruction set has them
// (narrow_simd.h); Simd names them.
struct HalfTraits {
  using Store = uint16_t;
  using Acc = float;
  static Acc load(Store v) { return halfBitsToFloat(v); }
  static Store store(Acc v) { return floatToHalfBits(v); }
#if defined(CONFLUX_NARROW_SIMD512)
  using Simd = HalfSimd512;
#elif defined(CONFLUX_NARROW_SIMD)
  using Simd = HalfSimd;
#endif
};
struct Bf16Traits {
  using Store = uint16_t;
  using Acc = float;
  static Acc load(Store v) { return bf16ToFloat(v); }
  static Store store(Acc v) { return floatToBf16(v); }
#if defined(CONFLUX_NARROW_SIMD_BF16)
  using Simd = Bf16SimdNe;
#elif defined(CONFLUX_NARROW_SIMD512)
  using Simd = Bf16Simd512;
#elif defined(CONFLUX_NARROW_SIMD)
  using Simd = Bf16Simd;
#endif
};
template <class Tr>
concept HasSimd = requires { typename Tr::Simd; };
// fp8 widens through fp16's conversion instructions where the instruction set has them (fp8_simd.h).
template <bool E4M3>
struct Fp8Traits {
  using Store = uint8_t;
  using Acc = float;
  static Acc load(Store v) { return fp8ToFloat(v, E4M3 ? kE4M3 : kE5M2); }
  static Store store(Acc v) { return fp8Encode(v, E4M3 ? kE4M3 : kE5M2); }
#if defined(CONFLUX_NARROW_SIMD512)
  using Simd = Fp8Simd512<E4M3>;
#elif defined(CONFLUX_NARROW_SIMD)
  using Simd = Fp8Simd<E4M3>;
#endif
};

template <class A, cfxRedOp_t Op>
A combine(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if constexpr (Op == cfxProd) return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    if constexpr (Op == cfxMax) return a < b ? b : a;
    if constexpr (Op == cfxMin) return b < a ? b : a;
    if constexpr (Op == cfxSum || Op == cfxAvg) return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    if constexpr (Op == cfxProd) return a * b;
    if constexpr (Op == cfxMax) return a < b ? b : a;
    if constexpr (Op == cfxMin) return b < a ? b : a;
    if constexpr (Op == cfxSum || Op == cfxAvg) return a + b;
  }
  return a;
}

// Avg's division. For 8- and 32-bit integers it goes through double, which vectorises and is
// exact: with |sum| < 2^32 and divisor <= 2^16 a non-integer quotient is at least 2^-16 from an
// integer, far more than double's error (2^-21), so truncation gives the integer quotient.
template <class A>
A divide(A a, int divisor) {
  if constexpr (std::is_integral_v<A> && sizeof(A) <= 4) {
    return static_cast<A>(static_cast<double>(a) / divisor);
  } else {
    return static_cast<A>(a / static_cast<A>(divisor));
  }
}

// Avg's division when the divisor is a power of two (2, 4, 8 ranks...), with divide()'s bits and
// no divide instruction, whose throughput set Avg's pace (Intel Xeon VM, two L2-resident sources,
// GB/s of output: bf16 avg 8.9 against sum 17.4, int8 1.5 against 30, int64 2.5 against 30;
// perf/RESULTS.md, 2026-12-07). A float times the exact reciprocal 2^-k is the correctly rounded
// value of the same exact quotient as the division (NaNs and subnormals included); an integer
// shifts right, a negative one biased by 2^k - 1 first so that it truncates toward zero as
// division does. Integers stay in their own width (int8 avg 8.7 GB/s through int32, above
// through int8): with k below the type's bits the bias cannot overflow a negative value, and
// from there on every quotient truncates to 0 (`keep`).
template <class A>
struct Pow2Divisor {
  static constexpr int kBits = 8 * sizeof(A);
  explicit Pow2Divisor(int divisor) {
    const int k = std::countr_zero(static_cast<unsigned>(divisor));
    if constexpr (std::is_floating_point_v<A>) {
      reciprocal = A(1) / static_cast<A>(divisor);
    } else {
      shift = k < kBits ? k : kBits - 1;
      bias = static_cast<A>((A(1) << shift) - 1);
      keep = k < kBits ? static_cast<A>(~A(0)) : A(0);
    }
  }
  A operator()(A a) const {
    if constexpr (std::is_floating_point_v<A>) {
      return a * reciprocal;
    } else if constexpr (std::is_signed_v<A>) {
      const A biased = static_cast<A>(a + static_cast<A>(static_cast<A>(a >> (kBits - 1)) & bias));
      return static_cast<A>(static_cast<A>(biased >> shift) & keep);
    } else {
      return static_cast<A>(static_cast<A>(a >> shift) & keep);
    }
  }
  A reciprocal = A(0);
  int shift = 0;
  A bias = A(0);
  A keep = A(0);
};

// N sources, N known at compile time: one pass, each element loaded once per source, combined in
// source order, stored once. Pow2: Avg divides by Pow2Divisor.
template <class Tr, cfxRedOp_t Op, int N, bool Pow2>
void reduceFixed(typename Tr::Store* __restrict dst, const void* const* srcsv, size_t count, int divisor) {
  using S = typename Tr::Store;
  using A = typename Tr::Acc;
  const S* __restrict s[N];
  for (int k = 0; k < N; ++k) s[k] = static_cast<const S*>(srcsv[k]);
  const Pow2Divisor<A> pow2(Pow2 ? divisor : 1);
  for (size_t i = 0; i < count; ++i) {
    A acc = Tr::load(s[0][i]);
    // Sources 1..N-1, unrolled at compile time (a loop here would stop vectorisation).
    [&]<int... K>(std::integer_sequence<int, K...>) {
      ((acc = combine<A, Op>(acc, Tr::load(s[K + 1][i]))), ...);
    }(std::make_integer_sequence<int, N - 1>{});
    if constexpr (Op == cfxAvg) acc = Pow2 ? pow2(acc) : divide<A>(acc, divisor);
    dst[i] = Tr::store(acc);
  }
}

// Any number of sources: blocks accumulated in the accumulator type, then stored once.
template <class Tr, cfxRedOp_t Op, bool Pow2>
void reduceBlocked(typename Tr::Store* __restrict dst, const void* const* srcsv, int nsrc, size_t count, int divisor) {
  using S = typename Tr::Store;
  using A = typename Tr::Acc;
  const Pow2Divisor<A> pow2(Pow2 ? divisor : 1);
  constexpr size_t kBlock = 512;
  A acc[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    size_t n = count - base < kBlock ? count - base : kBlock;
    const S* s0 = static_cast<const S*>(srcsv[0]) + base;
    for (size_t i = 0; i < n; ++i) acc[i] = Tr::load(s0[i]);
    for (int k = 1; k < nsrc; ++k) {
      const S* sk = static_cast<const S*>(srcsv[k]) + base;
      for (size_t i = 0; i < n; ++i) acc[i] = combine<A, Op>(acc[i], Tr::load(sk[i]));
    }
    if constexpr (Op == cfxAvg) {
      for (size_t i = 0; i < n; ++i) acc[i] = Pow2 ? pow2(acc[i]) : divide<A>(acc[i], divisor);
    }
    for (size_t i = 0; i < n; ++i) dst[base + i] = Tr::store(acc[i]);
  }
}

template <class Tr, cfxRedOp_t Op, bool Pow2>
void reducePortable(typename Tr::Store* dst, const void* const* srcs, int nsrc, size_t count, int divisor) {
  switch (nsrc) {
    case 1: return reduceFixed<Tr, Op, 1, Pow2>(dst, srcs, count, divisor);
    case 2: return reduceFixed<Tr, Op, 2, Pow2>(dst, srcs, count, divisor);
    case 3: return reduceFixed<Tr, Op, 3, Pow2>(dst, srcs, count, divisor);
    case 4: return reduceFixed<Tr, Op, 4, Pow2>(dst, srcs, count, divisor);
    case 5: return reduceFixed<Tr, Op, 5, Pow2>(dst, srcs, count, divisor);
    case 6: return reduceFixed<Tr, Op, 6, Pow2>(dst, srcs, count, divisor);
    case 7: return reduceFixed<Tr, Op, 7, Pow2>(dst, srcs, count, divisor);
    case 8: return reduceFixed<Tr, Op, 8, Pow2>(dst, srcs, count, divisor);
    default: return reduceBlocked<Tr, Op, Pow2>(dst, srcs, nsrc, count, divisor);
  }
}

template <class Tr, cfxRedOp_t Op, bool Pow2>
void reduceWith(typename Tr::Store* dst, const void* const* srcs, int nsrc, size_t count, int divisor) {
  if constexpr (HasSimd<Tr>) {
    return reduceNarrowSimd<typename Tr::Simd, Op, Pow2>(dst, srcs, nsrc, count, divisor, &combine<float, Op>,
                                                         &divide<float>, &Tr::load, &Tr::store);
  } else {
    return reducePortable<Tr, Op, Pow2>(dst, srcs, nsrc, count, divisor);
  }
}

template <class Tr, cfxRedOp_t Op>
void reduceKernel(void* dstv, const void* const* srcs, int nsrc, size_t count, int divisor) {
  auto* dst = static_cast<typename Tr::Store*>(dstv);
  if constexpr (Op == cfxAvg) {
    if (isPowerOfTwo(divisor)) return reduceWith<Tr, Op, true>(dst, srcs, nsrc, count, divisor);
  }
  return reduceWith<Tr, Op, false>(dst, srcs, nsrc, count, divisor);
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
  fillRow<PlainTraits<int8_t>>(t.fn[cfxInt8]);
  fillRow<PlainTraits<uint8_t>>(t.fn[cfxUint8]);
  fillRow<PlainTraits<int32_t>>(t.fn[cfxInt32]);
  fillRow<PlainTraits<uint32_t>>(t.fn[cfxUint32]);
  fillRow<PlainTraits<int64_t>>(t.fn[cfxInt64]);
  fillRow<PlainTraits<uint64_t>>(t.fn[cfxUint64]);
  fillRow<HalfTraits>(t.fn[cfxFloat16]);
  fillRow<PlainTraits<float>>(t.fn[cfxFloat32]);
  fillRow<PlainTraits<double>>(t.fn[cfxFloat64]);
  fillRow<Bf16Traits>(t.fn[cfxBfloat16]);
  fillRow<Fp8Traits<true>>(t.fn[cfxFloat8e4m3]);
  fillRow<Fp8Traits<false>>(t.fn[cfxFloat8e5m2]);
  for (int type = 0; type < cfxNumTypes; ++type) {
    t.exact[type][0] = t.fn[type][cfxSum];
    t.exact[type][1] = t.fn[type][cfxAvg];
  }
  fillExactRow<ExactF64>(t.exact[cfxFloat64]);
  fillExactRow<ExactF32>(t.exact[cfxFloat32]);
  fillExactRow<ExactNarrow<NarrowF16>>(t.exact[cfxFloat16]);
  fillExactRow<ExactNarrow<NarrowBf16>>(t.exact[cfxBfloat16]);
  fillExactRow<ExactNarrow<NarrowFp8<true>>>(t.exact[cfxFloat8e4m3]);
  fillExactRow<ExactNarrow<NarrowFp8<false>>>(t.exact[cfxFloat8e5m2]);
  return t;
}

}  // namespace
}  // namespace conflux::reduce
