// What moving one small message per call between two cores costs on this machine, with no library
// around it: the floor under the latency path's time per call (perf/RESULTS.md 2026-11-28, seventh).
//
//   build/perf/line_handoff [messages]
//
// Two threads, pinned to CPUs 0 and 1 (they share nothing but the lines below):
//  - round trip: one line bounced back and forth (half of it is one hand-off of a written line);
//  - streaming: a producer writes a message (its sequence number and 8 B of data, one line) into
//    slot i of a ring and may run up to 32 messages ahead of the consumer, which polls slot i, reads
//    it and publishes how far it got (the shape of a 2-rank Broadcast on the mailboxes: a writer
//    that waits for no one, a reader that takes a miss per message). Slots lie `stride` bytes
//    apart: 64 (a packed ring) or 1088 (Conflux's Mailbox). The consumer may prefetch the next 4
//    slots, and each side may run `locked` locked read-modify-writes on a line of its own per
//    message: a Conflux call runs about seven (perf/probes/no_locked_ops.patch removes them).
// Prints the median of 5 rounds, ns per message.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kSlots = 64;
constexpr uint64_t kWindow = 32;

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct alignas(64) Line {
  std::atomic<uint64_t> v{0};
};

// `locked` locked read-modify-writes on a line only this thread touches.
inline void lockedOps(Line& own, int locked) {
  for (int i = 0; i < locked; ++i) own.v.fetch_add(1, std::memory_order_relaxed);
}

double roundTripNs(uint64_t n) {
  Line ping, pong;
  std::thread echo([&] {
    pin(1);
    for (uint64_t i = 1; i <= n; ++i) {
      while (ping.v.load(std::memory_order_acquire) != i) {
      }
      pong.v.store(i, std::memory_order_release);
    }
  });
  pin(0);
  const auto t0 = Clock::now();
  for (uint64_t i = 1; i <= n; ++i) {
    ping.v.store(i, std::memory_order_release);
    while (pong.v.load(std::memory_order_acquire) != i) {
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
  echo.join();
  return ns;
}

struct Stream {
  size_t stride;
  bool prefetch;
  int locked;
};

double streamNs(const Stream& s, uint64_t n) {
  std::vector<std::byte> ring(kSlots * s.stride + 64);
  auto* base = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(ring.data()) + 63) & ~uintptr_t{63});
  auto seqOf = [&](uint64_t i) { return reinterpret_cast<std::atomic<uint64_t>*>(base + (i % kSlots) * s.stride); };
  auto dataOf = [&](uint64_t i) { return reinterpret_cast<volatile uint64_t*>(base + (i % kSlots) * s.stride + 56); };
  for (uint64_t i = 0; i < kSlots; ++i) seqOf(i)->store(0);
  Line consumed, producerOwn, consumerOwn;
  std::thread producer([&] {
    pin(0);
    for (uint64_t i = 1; i <= n; ++i) {
      lockedOps(producerOwn, s.locked);
      while (i > consumed.v.load(std::memory_order_acquire) + kWindow) {
      }
      *dataOf(i) = i;
      seqOf(i)->store(i, std::memory_order_release);
    }
  });
  pin(1);
  uint64_t sum = 0;
  const auto t0 = Clock::now();
  for (uint64_t i = 1; i <= n; ++i) {
    lockedOps(consumerOwn, s.locked);
    while (seqOf(i)->load(std::memory_order_acquire) != i) {
    }
    sum += *dataOf(i);
    if (s.prefetch) {
      for (uint64_t d = 1; d <= 4; ++d) __builtin_prefetch(seqOf(i + d), 0, 3);
    }
    consumed.v.store(i, std::memory_order_release);
  }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / n;
  producer.join();
  if (sum != n * (n + 1) / 2) {
    std::fprintf(stderr, "line_handoff: wrong data\n");
    std::exit(1);
  }
  return ns;
}

template <class F>
double median5(F&& run) {
  std::vector<double> v;
  for (int r = 0; r < 5; ++r) v.push_back(run());
  std::sort(v.begin(), v.end());
  return v[2];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  if (std::thread::hardware_concurrency() < 2) {
    std::fprintf(stderr, "line_handoff: needs 2 CPUs\n");
    return 1;
  }
  std::printf("round trip of one line: %.1f ns\n", median5([&] { return roundTripNs(n / 10); }));
  std::printf("%-7s %-9s %-7s %s\n", "stride", "prefetch", "locked", "ns per message");
  for (size_t stride : {64, 1088}) {
    for (int locked : {0, 1, 2, 7}) {
      for (bool prefetch : {false, true}) {
        const Stream s{stride, prefetch, locked};
        std::printf("%-7zu %-9s %-7d %.1f\n", stride, prefetch ? "yes" : "no", locked,
                    median5([&] { return streamNs(s, n); }));
      }
    }
  }
  return 0;
}
