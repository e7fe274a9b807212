// Reduction kernels compiled for the generic instruction set (flags set in comm/CMakeLists.txt).
#include "reduce/kernels_impl.h"

namespace conflux::reduce {

const KernelTable& kernelsGeneric() {
  static const KernelTable table = buildTable("generic");
  return table;
}

}  // namespace conflux::reduce
