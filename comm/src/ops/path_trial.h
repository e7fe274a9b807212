// Large AllGather and Broadcast where every local rank has a CPU of its own: the staged path (two
// copies, streaming stores into the slots) or the single copy (each rank reads its peers' inputs
// with process_vm_readv). Which is faster depends on the machine. On the AMD EPYC VM, 2-rank
// AllGather of 64 MiB: staged 8.3 ms, single copy 11.2 (perf/RESULTS.md, 2026-11-29, tenth). On
// the Intel Xeon VM: staged 6.6 / 13.9 / 55.1 ms at 32 / 64 / 256 MiB, single copy 3.7 / 12.1 /
// 51.9, Broadcast of 64 MiB 17.3 against 14.5 (perf/RESULTS.md, 2026-12-02).
//
// Single copies into buffers a process has not yet read that way start slow and speed up over
// tens of calls, for Open MPI's too (2-rank AllGather of 32 MiB on the Intel Xeon VM, single copy,
// call by call: 10.4, 8.3, 7.6, 7.0, 6.5 ms ... 4.4-4.8 from the 25th; Open MPI with -w 0, 5 and
// 40: 7.1, 6.1 and 5.0 ms; staged 7.0-7.3 from the second), so a trial made on the first calls
// would keep the staged path where the single copy is the faster.
//
// So local rank 0 chooses, in each size class (sizeClass: 16-64 MiB of output, 64-256, and more),
// and every rank follows it: rank 0 publishes the path of each such call before the call's first
// barrier (Context::publishGatherPath) and every rank reads it after that barrier, so all take the
// same one. The first kWarmCalls calls of a class take the single copy, untimed; then the calls
// alternate, staged first, timed by rank 0 on the wall clock from publishing to finishing. One call
// of each decides when one path is kDecisiveMargin times faster, otherwise two of each do, by the
// fastest call of each path (a call is only ever slowed by what else runs); the staged path must
// be kStagedMargin times faster to be kept, as the single copy is still speeding up.
// CFX_GATHER_PATH=staged or single forces one. The path changes only the speed, never the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace conflux {

enum class GatherPath : int32_t { kStaged = 0, kSingleCopy = 1 };

class PathTrial {
 public:
  enum class Mode { kAuto, kStaged, kSingleCopy };
  // Calls from this many bytes of output take the trial (below, the single copy, always faster).
  static constexpr size_t kMinBytes = size_t{16} << 20;
  static constexpr int kSizeClasses = 3;
  static constexpr double kDecisiveMargin = 1.2;
  static constexpr double kStagedMargin = 1.1;
  static constexpr size_t kSamples = 2;
  static constexpr int kWarmCalls = 8;
  // A call's path, and whether rank 0 times it for the trial.
  struct Pick {
    GatherPath path;
    bool timed;
  };
  static int sizeClass(size_t bytes);
  // The verdict of a trial with these samples (bytes per ns of each call): kAuto while it needs more.
  static Mode decide(const std::vector<double>& staged, const std::vector<double>& single);
  // CFX_GATHER_PATH: auto, staged or single; throws kInvalidArgument otherwise.
  static Mode modeFromEnv();

  explicit PathTrial(Mode mode = Mode::kAuto) {
    for (Trial& t : trials_) t.mode = mode;
  }
  // Rank 0: the path of its next call of `bytes`.
  Pick next(size_t bytes);
  // Rank 0: a call of `bytes` took `ns` on `path`.
  void record(size_t bytes, GatherPath path, int64_t ns);
  Mode mode(size_t bytes) const { return trials_[sizeClass(bytes)].mode; }

 private:
  struct Trial {
    Mode mode = Mode::kAuto;
    int warmCalls = 0;
    std::vector<double> rates[2];  // [GatherPath]: bytes per ns of each call
  };
  Trial trials_[kSizeClasses];
};

}  // namespace conflux
