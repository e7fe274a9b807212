// membw: what this machine's memory allows a shared-memory collective, measured (issue #31).
//
// T threads (1..N, thread i pinned to the i-th CPU this process may use) each own buffers of SIZE
// bytes that they touch first (so pages land where the thread runs), and run one kernel REPS
// times after a warm-up pass; a pass's time is the slowest thread's. Kernels:
//   memcpy   dst = src              (glibc's memcpy)
//   add      a[i] = b[i] + c[i]     (plain stores, compiler-vectorised; stores read the line first)
//   add_nt   a[i] = b[i] + c[i]     (non-temporal stores: AVX-512 where the CPU has it, else AVX2)
//   acc      a[i] += b[i]           (in place, as a reduction into an output does)
//   add2_nt  a[i] = d[i] = b[i] + c[i]  (non-temporal stores into two outputs: registered
//            AllReduce's pattern at 2 ranks, two reads for two writes; on the AMD EPYC VM it
//            moved more traffic than add_nt, perf/RESULTS.md 2026-11-28 (fourth))
//   xcore    a hand-off between two cores, as a staged collective does: thread 0 copies 512 KiB
//            chunks of its buffer into one of two shared slots and raises a flag, thread 1 copies
//            each slot into its own buffer and lowers it (2 threads only; payload = bytes handed
//            over). On a VM whose two vCPUs may sit on one core complex or on two, this is what
//            changes, while the single-core kernels above do not.
// xcore is measured only when asked for (--kernels ...,xcore) and only at 2 threads.
// Printed per kernel and thread count: payload GB/s (bytes of result per second, all threads) and
// traffic GB/s (STREAM's accounting: memcpy 2x, add/add_nt/acc 3x, add2_nt 4x the payload, which
// is one output's bytes), median and best. The last line, `# bound traffic_gbps T X`, is the best
// median traffic of add, add_nt and add2_nt at the largest thread count: perf/compare divides each
// collective's minimum DRAM traffic by it.
//
//   membw [--size MiB] [--reps N] [--threads 1,2] [--kernels memcpy,add,add_nt,acc,add2_nt]
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  size_t bytes = size_t{256} << 20;
  int reps = 7;
  std::vector<int> threads;
  std::vector<std::string> kernels{"memcpy", "add", "add_nt", "acc", "add2_nt"};
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

std::vector<int> usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

void addPlain(float* __restrict a, const float* __restrict b, const float* __restrict c, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] = b[i] + c[i];
}

void accPlain(float* __restrict a, const float* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) a[i] += b[i];
}

// b + c with streaming stores into a and, for add2_nt, into d too.
template <bool kTwo>
__attribute__((target("avx512f"))) void addStream512(float* a, float* d, const float* b, const float* c, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_add_ps(_mm512_load_ps(b + i), _mm512_load_ps(c + i));
    _mm512_stream_ps(a + i, v);
    if constexpr (kTwo) _mm512_stream_ps(d + i, v);
  }
  _mm_sfence();
}

template <bool kTwo>
__attribute__((target("avx2"))) void addStream256(float* a, float* d, const float* b, const float* c, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const __m256 v = _mm256_add_ps(_mm256_load_ps(b + i), _mm256_load_ps(c + i));
    _mm256_stream_ps(a + i, v);
    if constexpr (kTwo) _mm256_stream_ps(d + i, v);
  }
  _mm_sfence();
}

using AddFn = void (*)(float*, float*, const float*, const float*, size_t);

// The streaming kernels for this CPU: AVX-512 where it has it, else AVX2.
struct StreamKernels {
  AddFn add;
  AddFn add2;
  const char* isa;
};

StreamKernels pickStreamKernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {addStream512<false>, addStream512<true>, "avx512f"};
  return {addStream256<false>, addStream256<true>, "avx2"};
}

int traffic(const std::string& kernel) {
  if (kernel == "memcpy" || kernel == "xcore") return 2;
  return kernel == "add2_nt" ? 4 : 3;
}

// xcore: thread 0 hands `bytes` over to thread 1 through two shared 512 KiB slots; the time of
// each measured pass, in seconds.
std::vector<double> handOff(const std::vector<int>& cpus, const Options& o) {
  constexpr size_t kSlot = 512 << 10;
  const size_t chunks = o.bytes / kSlot;
  auto* slots = static_cast<std::byte*>(std::aligned_alloc(64, 2 * kSlot));
  std::atomic<uint64_t> full[2] = {0, 0};  // the chunk number + 1 a slot holds, 0: empty
  std::vector<double> times(o.reps);
  std::barrier sync(2);
  auto side = [&](int t) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[t], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    auto* mine = static_cast<std::byte*>(std::aligned_alloc(64, o.bytes));
    std::memset(mine, t, o.bytes);
    if (t == 0) std::memset(slots, 0, 2 * kSlot);
    uint64_t seq = 0;
    for (int r = -1; r < o.reps; ++r) {
      sync.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      for (size_t c = 0; c < chunks; ++c, ++seq) {
        auto& flag = full[seq % 2];
        std::byte* slot = slots + (seq % 2) * kSlot;
        if (t == 0) {
          while (flag.load(std::memory_order_acquire) != 0) {}
          std::memcpy(slot, mine + c * kSlot, kSlot);
          flag.store(seq + 1, std::memory_order_release);
        } else {
          while (flag.load(std::memory_order_acquire) != seq + 1) {}
          std::memcpy(mine + c * kSlot, slot, kSlot);
          flag.store(0, std::memory_order_release);
        }
      }
      sync.arrive_and_wait();
      if (t == 0 && r >= 0) times[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    std::free(mine);
  };
  std::thread other(side, 1);
  side(0);
  other.join();
  std::free(slots);
  return times;
}

// One kernel on `cpus.size()` threads: the slowest thread's time of each measured pass, in seconds.
std::vector<double> run(const std::string& kernel, const std::vector<int>& cpus, const Options& o,
                        const StreamKernels& stream) {
  if (kernel == "xcore") return handOff(cpus, o);
  const size_t n = o.bytes / sizeof(float);
  const size_t nthreads = cpus.size();
  std::vector<std::vector<double>> times(nthreads, std::vector<double>(o.reps));
  std::barrier sync(static_cast<std::ptrdiff_t>(nthreads));
  std::vector<std::thread> pool;
  for (size_t t = 0; t < nthreads; ++t) {
    pool.emplace_back([&, t] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[t], &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      auto* a = static_cast<float*>(std::aligned_alloc(64, o.bytes));
      auto* b = static_cast<float*>(std::aligned_alloc(64, o.bytes));
      auto* c = static_cast<float*>(std::aligned_alloc(64, o.bytes));
      float* d = kernel == "add2_nt" ? static_cast<float*>(std::aligned_alloc(64, o.bytes)) : nullptr;
      for (size_t i = 0; i < n; ++i) {  // first touch, by the thread that uses them
        a[i] = 0.0f;
        b[i] = static_cast<float>(i & 1023);
        c[i] = 1.0f;
        if (d != nullptr) d[i] = 0.0f;
      }
      for (int r = -1; r < o.reps; ++r) {  // r = -1: warm-up
        sync.arrive_and_wait();
        const auto t0 = std::chrono::steady_clock::now();
        if (kernel == "memcpy") {
          std::memcpy(a, b, o.bytes);
        } else if (kernel == "add") {
          addPlain(a, b, c, n);
        } else if (kernel == "add_nt") {
          stream.add(a, nullptr, b, c, n);
        } else if (kernel == "add2_nt") {
          stream.add2(a, d, b, c, n);
        } else {
          accPlain(a, b, n);
        }
        asm volatile("" ::: "memory");
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r >= 0) times[t][r] = dt;
      }
      std::free(a);
      std::free(b);
      std::free(c);
      std::free(d);
    });
  }
  for (auto& th : pool) th.join();
  std::vector<double> slowest(o.reps, 0.0);
  for (int r = 0; r < o.reps; ++r) {
    for (size_t t = 0; t < nthreads; ++t) slowest[r] = std::max(slowest[r], times[t][r]);
  }
  return slowest;
}

int usage(const char* why) {
  std::fprintf(stderr, "membw: %s\nusage: membw [--size MiB] [--reps N] [--threads 1,2] [--kernels memcpy,add,add_nt,acc,add2_nt]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  const std::vector<int> cpus = usableCpus();
  for (int t = 1; t <= static_cast<int>(cpus.size()); ++t) o.threads.push_back(t);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
    const std::string value = argv[++i];
    if (arg == "--size") {
      o.bytes = static_cast<size_t>(std::atol(value.c_str())) << 20;
    } else if (arg == "--reps") {
      o.reps = std::atoi(value.c_str());
    } else if (arg == "--threads") {
      o.threads.clear();
      for (const auto& t : split(value)) o.threads.push_back(std::atoi(t.c_str()));
    } else if (arg == "--kernels") {
      o.kernels = split(value);
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (o.bytes < 4096 || o.reps < 1) return usage("--size must be >= 1 and --reps >= 1");
  for (int t : o.threads) {
    if (t < 1 || t > static_cast<int>(cpus.size())) return usage("--threads: between 1 and the CPUs this process may use");
  }
  for (const auto& k : o.kernels) {
    if (k != "memcpy" && k != "add" && k != "add_nt" && k != "acc" && k != "add2_nt" && k != "xcore") {
      return usage(("unknown kernel " + k).c_str());
    }
  }
  const StreamKernels stream = pickStreamKernels();
  std::printf("# membw: %zu MiB per buffer, 3 buffers per thread (4 for add2_nt), %d passes after a warm-up, "
              "add_nt and add2_nt with %s\n",
              o.bytes >> 20, o.reps, stream.isa);
  std::printf("# %-8s %7s %14s %12s %14s %12s\n", "kernel", "threads", "payload_med", "payload_best", "traffic_med",
              "traffic_best");
  std::map<int, double> bound;  // threads -> best median traffic of add, add_nt, add2_nt
  for (int t : o.threads) {
    const std::vector<int> use(cpus.begin(), cpus.begin() + t);
    for (const auto& k : o.kernels) {
      if (k == "xcore" && t != 2) continue;
      std::vector<double> s = run(k, use, o, stream);
      std::sort(s.begin(), s.end());
      const double bytes = static_cast<double>(o.bytes) * (k == "xcore" ? 1 : t);
      const double med = bytes / s[s.size() / 2] / 1e9;
      const double best = bytes / s.front() / 1e9;
      std::printf("  %-8s %7d %14.2f %12.2f %14.2f %12.2f\n", k.c_str(), t, med, best, med * traffic(k),
                  best * traffic(k));
      if (k == "add" || k == "add_nt" || k == "add2_nt") bound[t] = std::max(bound[t], med * traffic(k));
    }
  }
  if (!bound.empty() && bound.rbegin()->second > 0) {
    std::printf("# bound traffic_gbps %d %.2f\n", bound.rbegin()->first, bound.rbegin()->second);
  }
  return 0;
}
