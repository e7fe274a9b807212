// The stores of the staged reductions' hand-offs: the bytes a rank writes into shared memory for its
// peers to read next (AllReduce's and Reduce's inputs into the staging slots and their reduced
// slices into the scratch, ReduceScatter's inputs into the slots; on hosts of several NUMA domains,
// the two-level AllReduce's slots, domain partials and scratch slices: ops/two_level.cc).
//
// With ordinary stores those lines are dirty in the writer's cache, and the reader takes them from
// there. On the AMD EPYC VM the hypervisor at times places the two vCPUs where such transfers run
// at half speed or less, for tens of seconds at a time (perf/RESULTS.md, 2026-11-25 and 2026-11-29
// tenth): 2-rank ReduceScatter of 64 MiB then took 20.5-27.5 ms with ordinary stores into the slots
// and 6.9-7.2 with streaming ones, whose lines reach the reader from memory, AllReduce 30.9-42.1
// against 21.7-23.2; jobs in such a spell made section 2's 3x cliff. Outside the spells streaming
// stores cost the reductions 10-20% there (AllReduce of 256 MiB 45-51 against 55-58 ms) and 4-12%
// on the Intel Xeon VM (perf/RESULTS.md, 2026-12-06). Broadcast, AllGather and AlltoAll, whose
// streaming slots cost little outside the spells, always stream (StoreChooser::copyToSlot).
//
// So each rank tries both kinds on whole calls, in each size class (sizeClass: 16-64 MiB handed
// off per rank, 64-256, and more), and tries again every kRetrialCalls calls, as the spells come
// and go:
//   a trial:      the class's first two calls, one with streaming stores, then one with ordinary
//                 stores, each timed on the wall clock from its plan to its end (the readers' cost
//                 lands in the whole call, not in the writer's copy). The first call of a class
//                 also pays its first touches (the scratch, cold caches), which only biases the
//                 trial towards ordinary stores, the kind that is right outside the spells; a
//                 benchmark's warm-up calls (nccl-tests' -w) then cover the trial;
//   the verdict:  streaming stores when their call was kSpellMargin times as fast, ordinary
//                 stores otherwise: outside the spells streaming stores were slower or level on
//                 every machine measured (the two VMs above, the 16-core host, perf/RESULTS.md
//                 2026-11-29), and inside them 1.3-4x the faster;
//   every kRetrialCalls-th call of the class starts the trial again.
// The schedule follows only the calls' sizes, which every rank shares, so the ranks try each kind
// on the same calls. The choice changes only the speed, never the bytes, so ranks may keep
// different kinds. CFX_STREAMING_STORES=1 or 0 forces one kind, with no trial.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/copy.h"

namespace conflux {

class HandoffStores {
 public:
  using Mode = StoreChooser::Mode;
  // Calls that hand off fewer bytes per rank use ordinary stores, untimed.
  static constexpr size_t kMinBytes = StoreChooser::kStagingStreamingMinBytes;
  static constexpr int kSizeClasses = 3;
  static constexpr double kSpellMargin = 1.2;
  // A trial's cost outside a spell: one call with streaming stores, 4-20% slower, in 64 (0.3%);
  // inside one, one call with ordinary stores, 1.3-4x slower (0.5-5%). A spell that starts after a
  // trial waits at most this many calls: 0.8-3.3 s for 2-rank AllReduce of 64-256 MiB on the Intel
  // Xeon VM (13-52 ms a call).
  static constexpr uint64_t kRetrialCalls = 64;

  struct Pick {
    bool streaming = false;
    bool timed = false;  // a trial's call: record() its time
  };

  explicit HandoffStores(Mode mode = Mode::kAuto) : forced_(mode) {}
  static int sizeClass(size_t bytes);

  // The stores of this rank's next call that hands off `bytes` per rank.
  Pick next(size_t bytes);
  // A timed call (Pick::timed) of `bytes` took `ns` with these stores.
  void record(size_t bytes, bool streaming, int64_t ns);
  // The kind that calls of `bytes` use outside their trials.
  Mode mode(size_t bytes) const;

 private:
  struct Trial {
    uint64_t calls = 0;
    double rate[2] = {0.0, 0.0};  // bytes per ns of the current trial's call of each kind (0: none yet)
    bool streaming = false;       // the verdict so far
    bool decided = false;         // a trial has given one (for the log line)
  };
  Mode forced_;
  Trial trials_[kSizeClasses];
};

}  // namespace conflux
