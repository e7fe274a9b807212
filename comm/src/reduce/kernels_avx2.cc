// Reduction kernels compiled for the avx2 instruction set (flags set in comm/CMakeLists.txt).
#include "reduce/kernels_impl.h"

namespace conflux::reduce {

const KernelTable& kernelsAvx2() {
  static const KernelTable table = buildTable("avx2");
  return table;
}

}  // namespace conflux::reduce
