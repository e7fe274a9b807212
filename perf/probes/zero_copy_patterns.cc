// How registered AllReduce's rank can write its slice (comm/src/ops/zero_copy.cc), as memory
// traffic alone: 2 pinned threads, each the "rank" of half of a 2-rank fp32 sum over memfd-backed
// buffers (two inputs, two outputs), timed per pass; the median of 7 passes.
//   0  reduce a block into scratch, copy it into both outputs (the old path; 64 KiB blocks)
//   1  the same with streaming stores for the copies
//   2  reduce a block straight into this rank's output, copy it from there into the other
//   3  one fused pass: each sum stored into both outputs
//   4  the same with streaming stores
//   5  a plain a = b + c into one output (the shape of perf/membw's add kernel)
//   6  512-byte tiles reduced in L1, each streamed into both outputs line by line (the path of
//      reduce::reduceStreamed, comm/src/reduce/stream_out.h)
// Not built by CMake (it needs AVX-512F):
//   g++ -O2 -mavx512f -o /tmp/zc perf/probes/zero_copy_patterns.cc -lpthread
//   /tmp/zc MIB VARIANT [BLOCK_KIB]      e.g. for v in 0 2 3; do /tmp/zc 128 $v 4; done
// On the Intel VM (2026-11-27), 128 MiB: 0 with 64 KiB blocks 36-38 ms, 3 26.5-28.5 ms, 2 with
// 4 KiB blocks 28.1-28.4 ms (perf/RESULTS.md). On the AMD EPYC VM (2026-11-28), medians of 6 runs:
// 4 12.6 ms, 1 with 64 KiB blocks 17.5-18, 1 with 1 KiB blocks 14.7, 2 with 4 KiB blocks 19.6.
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

float* shared(size_t n) {
  const size_t bytes = n * sizeof(float);
  int fd = memfd_create("zc", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0) std::exit(1);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) std::exit(1);
  std::memset(p, 1, bytes);
  return static_cast<float*>(p);
}

void add(float* o, const float* a, const float* b, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    _mm512_storeu_ps(o + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  }
}

void copy(float* o, const float* a, size_t n, bool streaming) {
  if (!streaming) {
    std::memcpy(o, a, n * sizeof(float));
    return;
  }
  for (size_t i = 0; i < n; i += 16) _mm512_stream_ps(o + i, _mm512_loadu_ps(a + i));
}

void tiled(float* o1, float* o2, const float* a, const float* b, size_t n) {
  alignas(64) float t[128];
  for (size_t base = 0; base < n; base += 128) {
    const size_t m = std::min<size_t>(128, n - base);
    for (size_t i = 0; i < m; ++i) t[i] = a[base + i] + b[base + i];
    for (size_t i = 0; i < m; i += 16) {
      const __m512 v = _mm512_load_ps(t + i);
      _mm512_stream_ps(o1 + base + i, v);
      _mm512_stream_ps(o2 + base + i, v);
    }
  }
}

void fused(float* o1, float* o2, const float* a, const float* b, size_t n, bool streaming) {
  for (size_t i = 0; i < n; i += 16) {
    __m512 v = _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    if (streaming) {
      _mm512_stream_ps(o1 + i, v);
      _mm512_stream_ps(o2 + i, v);
    } else {
      _mm512_storeu_ps(o1 + i, v);
      _mm512_storeu_ps(o2 + i, v);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MIB VARIANT [BLOCK_KIB]\n", argv[0]);
    return 2;
  }
  const size_t bytes = static_cast<size_t>(std::atol(argv[1])) << 20;
  const int variant = std::atoi(argv[2]);
  const size_t block = (argc > 3 ? static_cast<size_t>(std::atol(argv[3])) : 64) << 10;
  const size_t n = bytes / sizeof(float), per = block / sizeof(float);
  float* in[2] = {shared(n), shared(n)};
  float* out[2] = {shared(n), shared(n)};
  const int passes = 7;
  std::atomic<int> arrived{0};
  std::vector<double> seconds;
  auto rank = [&](int me) {
    pin(me);
    std::vector<float> scratch(per + 16);
    const size_t lo = me * n / 2, hi = (me + 1) * n / 2;
    for (int pass = 0; pass < passes; ++pass) {
      arrived.fetch_add(1);
      while (arrived.load() < 2 * (pass + 1)) {
      }
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t b = lo; b < hi; b += per) {
        const size_t len = std::min(per, hi - b);
        switch (variant) {
          case 0:
          case 1:
            add(scratch.data(), in[0] + b, in[1] + b, len);
            copy(out[1 - me] + b, scratch.data(), len, variant == 1);
            copy(out[me] + b, scratch.data(), len, variant == 1);
            break;
          case 2:
            add(out[me] + b, in[0] + b, in[1] + b, len);
            copy(out[1 - me] + b, out[me] + b, len, false);
            break;
          case 3:
          case 4: fused(out[0] + b, out[1] + b, in[0] + b, in[1] + b, len, variant == 4); break;
          case 6: tiled(out[0] + b, out[1] + b, in[0] + b, in[1] + b, len); break;
          default: add(out[me] + b, in[0] + b, in[1] + b, len); break;
        }
      }
      _mm_sfence();
      const auto t1 = std::chrono::steady_clock::now();
      if (me == 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
  };
  std::thread t0(rank, 0), t1(rank, 1);
  t0.join();
  t1.join();
  std::sort(seconds.begin(), seconds.end());
  const double med = seconds[seconds.size() / 2];
  const double traffic = (variant == 5 ? 3.0 : 4.0) * static_cast<double>(bytes);  // counted as perf/membw does
  std::printf("variant %d, %zu KiB blocks: median %.2f ms, %.2f GB/s of counted traffic\n", variant, block >> 10,
              med * 1e3, traffic / med / 1e9);
}
