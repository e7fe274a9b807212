// Reduction kernels compiled for AVX-512 with the BF16 extension (flags set in comm/CMakeLists.txt):
// the avx512 table with bf16 narrowed by vcvtne2ps2bf16 (reduce/narrow_simd.h).
#include "reduce/kernels_impl.h"

namespace conflux::reduce {

const KernelTable& kernelsAvx512Bf16() {
  static const KernelTable table = buildTable("avx512bf16");
  return table;
}

}  // namespace conflux::reduce
