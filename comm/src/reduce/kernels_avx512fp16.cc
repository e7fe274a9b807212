// Reduction kernels for CPUs with AVX-512 BF16 and FP16 (flags set in comm/CMakeLists.txt): the
// avx512bf16 table, with two-source fp16 and fp8 reductions in fp16 arithmetic
// (reduce/fp16_native.h); any other call takes that table's kernel.
#include "reduce/fp16_native.h"
#include "reduce/kernels.h"

namespace conflux::reduce {

namespace {

template <class V, cfxDataType_t Type, cfxRedOp_t Op>
void pairNativeElseWide(void* dst, const void* const* srcs, int nsrc, size_t count, int divisor) {
  if (pairIsNative<V, Op>(nsrc, divisor)) return reducePairNative<V, Op>(dst, srcs[0], srcs[1], count);
  kernelsAvx512Bf16().fn[Type][Op](dst, srcs, nsrc, count, divisor);
}

template <class V, cfxDataType_t Type>
void fillNativeRow(ReduceFn* row) {
  row[cfxSum] = &pairNativeElseWide<V, Type, cfxSum>;
  row[cfxProd] = &pairNativeElseWide<V, Type, cfxProd>;
  row[cfxMax] = &pairNativeElseWide<V, Type, cfxMax>;
  row[cfxMin] = &pairNativeElseWide<V, Type, cfxMin>;
  row[cfxAvg] = &pairNativeElseWide<V, Type, cfxAvg>;
}

}  // namespace

const KernelTable& kernelsAvx512Fp16() {
  static const KernelTable table = [] {
    KernelTable t = kernelsAvx512Bf16();
    t.isa = "avx512fp16";
    fillNativeRow<HalfNative, cfxFloat16>(t.fn[cfxFloat16]);
    fillNativeRow<Fp8Native<true>, cfxFloat8e4m3>(t.fn[cfxFloat8e4m3]);
    fillNativeRow<Fp8Native<false>, cfxFloat8e5m2>(t.fn[cfxFloat8e5m2]);
    return t;
  }();
  return table;
}

}  // namespace conflux::reduce
