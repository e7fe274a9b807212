#include "reduce/kernels.h"

namespace conflux::reduce {

bool cpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

bool cpuHasAvx512Bf16() {
  return cpuHasAvx512() && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bf16");
}

bool cpuHasAvx512Fp16() { return cpuHasAvx512Bf16() && __builtin_cpu_supports("avx512fp16"); }

const KernelTable& kernels() {
  static const KernelTable& chosen = []() -> const KernelTable& {
    __builtin_cpu_init();
    if (cpuHasAvx512Fp16()) return kernelsAvx512Fp16();
    if (cpuHasAvx512Bf16()) return kernelsAvx512Bf16();
    if (cpuHasAvx512()) return kernelsAvx512();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) {
      return kernelsAvx2();
    }
    return kernelsGeneric();
  }();
  return chosen;
}

const char* dataTypeName(cfxDataType_t type) {
  static const char* const kNames[cfxNumTypes] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                                  "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return (type >= 0 && type < cfxNumTypes) ? kNames[type] : "invalid";
}

const char* redOpName(cfxRedOp_t op) {
  static const char* const kNames[cfxNumOps] = {"sum", "prod", "max", "min", "avg"};
  if (op == cfxSumExact) return "sum_exact";
  if (op == cfxAvgExact) return "avg_exact";
  return (op >= 0 && op < cfxNumOps) ? kNames[op] : "invalid";
}

}  // namespace conflux::reduce
