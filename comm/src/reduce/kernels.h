// Reduction kernels for every datatype x op: dst[i] = src[0][i] op src[1][i] op ... op src[n-1][i],
// always in source order, so every rank that reduces the same inputs gets bitwise the same output.
// fp16, bf16 and fp8 accumulate in fp32 and round once; integers wrap; Avg divides the sum by
// `divisor` (truncating for integers). Kernels are compiled for several instruction sets and chosen
// at run time.
#pragma once

#include <cstddef>

#include "conflux/conflux.h"
#include "reduce/type_size.h"

namespace conflux::reduce {

using ReduceFn = void (*)(void* dst, const void* const* srcs, int nsrc, size_t count, int divisor);

struct KernelTable {
  const char* isa;
  ReduceFn fn[cfxNumTypes][cfxNumOps];
  // cfxSumExact and cfxAvgExact (exact_sum.h): [type][0] sums, [type][1] averages. Integer types
  // hold their Sum and Avg kernels (integer sums are exact already).
  ReduceFn exact[cfxNumTypes][2];
};

const KernelTable& kernelsGeneric();
const KernelTable& kernelsAvx2();    // requires AVX2, FMA and F16C
const KernelTable& kernelsAvx512();  // requires AVX-512F, BW and VL, and AVX2
const KernelTable& kernelsAvx512Bf16();  // requires the above, AVX-512DQ and AVX-512 BF16
const KernelTable& kernelsAvx512Fp16();  // requires the above and AVX-512 FP16
// Whether this CPU runs each table.
bool cpuHasAvx512();
bool cpuHasAvx512Bf16();
bool cpuHasAvx512Fp16();
// The best table this CPU supports.
const KernelTable& kernels();

// Whether `op` is one of the exact reductions, and the plain op it rounds exactly.
constexpr bool isExactOp(cfxRedOp_t op) { return op == cfxSumExact || op == cfxAvgExact; }
constexpr cfxRedOp_t plainOp(cfxRedOp_t op) {
  return op == cfxSumExact ? cfxSum : op == cfxAvgExact ? cfxAvg : op;
}
// The op of a partial reduction (a step that is not the last): an Avg is a Sum until its last
// step, which divides once, so that its integer results truncate only once.
constexpr cfxRedOp_t partialOp(cfxRedOp_t op) { return op == cfxAvg ? cfxSum : op; }
// Whether Avg's divisor is a power of two: the kernels then scale instead of dividing, with the
// division's bits (kernels_impl.h, Pow2Divisor; exact_impl.h).
constexpr bool isPowerOfTwo(int divisor) { return divisor > 0 && (divisor & (divisor - 1)) == 0; }
// Whether the datatype is floating point (the exact reductions differ from the plain ones there).
constexpr bool isFloatType(cfxDataType_t t) {
  return t == cfxFloat16 || t == cfxFloat32 || t == cfxFloat64 || t == cfxBfloat16 || t == cfxFloat8e4m3 ||
         t == cfxFloat8e5m2;
}

inline void reduce(void* dst, const void* const* srcs, int nsrc, size_t count, cfxDataType_t type, cfxRedOp_t op,
                   int divisor) {
  if (isExactOp(op)) {
    kernels().exact[type][op == cfxAvgExact ? 1 : 0](dst, srcs, nsrc, count, divisor);
    return;
  }
  kernels().fn[type][op](dst, srcs, nsrc, count, divisor);
}

const char* dataTypeName(cfxDataType_t type);
const char* redOpName(cfxRedOp_t op);

}  // namespace conflux::reduce
