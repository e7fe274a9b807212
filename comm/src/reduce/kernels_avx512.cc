// Reduction kernels compiled for the avx512 instruction set (flags set in comm/CMakeLists.txt).
#include "reduce/kernels_impl.h"

namespace conflux::reduce {

const KernelTable& kernelsAvx512() {
  static const KernelTable table = buildTable("avx512");
  return table;
}

}  // namespace conflux::reduce
