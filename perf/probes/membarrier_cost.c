// Probe: can this kernel pay a sleeping waiter's fence with membarrier(GLOBAL_EXPEDITED), and what
// does one call cost? (perf/RESULTS.md, 2026-12-03 (third): the doorbell's fence.)
//
//   cc -O2 perf/probes/membarrier_cost.c -o /tmp/membarrier_cost
//   /tmp/membarrier_cost; (/tmp/membarrier_cost & /tmp/membarrier_cost; wait)   # alone, then two at once
//
// Prints the supported commands (MEMBARRIER_CMD_QUERY), the registration's result (0: registered)
// and the mean nanoseconds of 10,000 MEMBARRIER_CMD_GLOBAL_EXPEDITED calls.
#include <linux/membarrier.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

int main(void) {
  long q = membarrier(MEMBARRIER_CMD_QUERY);
  printf("query %#lx, GLOBAL_EXPEDITED %s\n", q, q > 0 && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ? "supported" : "absent");
  printf("register %ld\n", membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED));
  enum { kCalls = 10000 };
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < kCalls; ++i) membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED);
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("ns per call %.0f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / kCalls);
  return 0;
}
