// Reduction-kernel microbenchmark: for every datatype x op, reducing `nsrc` L2-resident inputs,
// beside memcpy of the same bytes (median of several trials each). Two ratios to memcpy:
//   out:   bytes of output per second (a reduce of 2 inputs also reads twice as much);
//   moved: bytes read and written per second ((nsrc + 1) x bytes, against memcpy's 2 x bytes),
//          the memory bandwidth the kernel achieves.
//   reduce_kernel_bench [bytes_per_buffer=262144] [nsrc=2] [isa=best|generic|avx2|avx512|avx512bf16|avx512fp16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reduce/float_formats.h"
#include "reduce/kernels.h"

using namespace conflux::reduce;
using Clock = std::chrono::steady_clock;

namespace {

// Median seconds per call of f over several trials of enough calls to last ~20 ms.
template <class F>
double medianSeconds(F&& f) {
  int reps = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) f();
    if (std::chrono::duration<double>(Clock::now() - t0).count() > 0.02) break;
    reps *= 2;
  }
  std::vector<double> trials;
  for (int t = 0; t < 7; ++t) {
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) f();
    trials.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  std::sort(trials.begin(), trials.end());
  return trials[trials.size() / 2];
}

// Small normal values of `type`, as gradients are (raw byte patterns would make many fp16 and bf16
// elements subnormal, which some CPUs process far more slowly and real data rarely holds).
void fillNormal(uint8_t* p, size_t count, cfxDataType_t type, int k) {
  for (size_t i = 0; i < count; ++i) {
    const float v = 1.0f + static_cast<float>((i * 7 + k * 13) & 63) / 64.0f;
    switch (type) {
      case cfxFloat16: reinterpret_cast<uint16_t*>(p)[i] = floatToHalfBits(v); break;
      case cfxBfloat16: reinterpret_cast<uint16_t*>(p)[i] = floatToBf16(v); break;
      case cfxFloat8e4m3: p[i] = fp8Encode(v, kE4M3); break;
      case cfxFloat8e5m2: p[i] = fp8Encode(v, kE5M2); break;
      case cfxFloat32: reinterpret_cast<float*>(p)[i] = v; break;
      case cfxFloat64: reinterpret_cast<double*>(p)[i] = v; break;
      default: std::memset(p + i * dataTypeSize(type), static_cast<int>((i * 7 + k * 13) & 63), dataTypeSize(type));
    }
  }
}

constexpr const char* kUsage =
    "usage: reduce_kernel_bench [bytes_per_buffer=262144] [nsrc=2] [isa=best|generic|avx2|avx512|avx512bf16|avx512fp16]\n";

// A positive whole number, all of `text`; 0 if it is not one.
unsigned long long positive(const char* text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 0);
  return end != text && *end == '\0' && text[0] != '-' ? v : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const size_t bytes = argc > 1 ? positive(argv[1]) : 256 << 10;
  const unsigned long long sources = argc > 2 ? positive(argv[2]) : 2;
  const std::string isa = argc > 3 ? argv[3] : "best";
  const bool knownIsa = isa == "best" || isa == "generic" || isa == "avx2" || isa == "avx512" || isa == "avx512bf16" ||
                        isa == "avx512fp16";
  if (bytes == 0 || sources == 0 || sources > 64 || !knownIsa || argc > 4) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const int nsrc = static_cast<int>(sources);
  const KernelTable& table = isa == "generic" ? kernelsGeneric()
                             : isa == "avx2"  ? kernelsAvx2()
                             : isa == "avx512" ? kernelsAvx512()
                             : isa == "avx512bf16" ? kernelsAvx512Bf16()
                             : isa == "avx512fp16" ? kernelsAvx512Fp16()
                                               : kernels();
  std::vector<std::vector<uint8_t>> src(nsrc, std::vector<uint8_t>(bytes));
  std::vector<uint8_t> dst(bytes);
  std::vector<const void*> ptrs;
  for (auto& s : src) ptrs.push_back(s.data());

  double memcpySec = medianSeconds([&] {
    std::memcpy(dst.data(), src[0].data(), bytes);
    asm volatile("" ::: "memory");
  });
  double memcpyGBs = bytes / memcpySec / 1e9;
  std::printf("# reduce_kernel_bench: isa %s, %d inputs of %zu bytes (L2-resident), GB/s of output\n", table.isa, nsrc,
              bytes);
  std::printf("# memcpy of the same bytes: %.2f GB/s\n", memcpyGBs);
  std::printf("# %-9s", "type");
  for (int op = 0; op < cfxNumOps; ++op) std::printf(" %7s %5s %6s", redOpName(static_cast<cfxRedOp_t>(op)), "out%", "moved%");
  std::printf(" %9s %9s", "sum_exact", "avg_exact");  // GB/s of output, the exact kernels (exact_sum.h)
  std::printf("\n");
  for (int t = 0; t < cfxNumTypes; ++t) {
    auto type = static_cast<cfxDataType_t>(t);
    size_t count = bytes / dataTypeSize(type);
    for (int k = 0; k < nsrc; ++k) fillNormal(src[k].data(), count, type, k);
    std::printf("  %-9s", dataTypeName(type));
    for (int op = 0; op < cfxNumOps; ++op) {
      double sec = medianSeconds([&] {
        table.fn[t][op](dst.data(), ptrs.data(), nsrc, count, nsrc);
        asm volatile("" ::: "memory");
      });
      double gbs = bytes / sec / 1e9;
      double moved = 100.0 * gbs * (nsrc + 1) / (2 * memcpyGBs);
      std::printf(" %7.2f %4.0f%% %5.0f%%", gbs, 100.0 * gbs / memcpyGBs, moved);
    }
    for (int avg = 0; avg < 2; ++avg) {
      double sec = medianSeconds([&] {
        table.exact[t][avg](dst.data(), ptrs.data(), nsrc, count, nsrc);
        asm volatile("" ::: "memory");
      });
      std::printf(" %9.2f", bytes / sec / 1e9);
    }
    std::printf("\n");
  }
  return 0;
}
