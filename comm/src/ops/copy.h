// Copies into user buffers. Messages much larger than the caches may be written with non-temporal
// (streaming) stores: the destination is not read for ownership first and does not evict the
// staging buffers, which saves a third of the memory traffic of the final copy, on machines whose
// streaming stores are fast. On others they are slower than ordinary stores, so each rank chooses
// (StoreChooser).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace conflux {

inline constexpr size_t kStreamingMinBytes = 8 << 20;

void copyOut(void* dst, const void* src, size_t bytes, bool streaming);

// Which stores one rank's large copies into user buffers use (messages of kStreamingMinBytes or
// more; smaller ones always use ordinary stores). Measured on two machines of this project's kind:
// on one, `a = b + c` with streaming stores moved 44.5 GB/s of DRAM traffic against 35 without; on
// another (an Intel Xeon VM), 20.4 against 22.8, and 2-rank AllGather and registered AllReduce of
// 64-128 MiB ran 11% faster with ordinary stores (perf/RESULTS.md, 2026-11-26). Which is faster
// also depends on what the other ranks do meanwhile, so with CFX_STREAMING_STORES=auto (the
// default) a rank's first large copies alternate between the two in pieces, each timed in the
// thread's CPU time (a piece preempted halfway is not charged for the other process), until each
// kind has written kTrialBytes; the kind with the higher median rate then stays for the
// communicator's life. The choice changes only the speed, never the bytes written, so ranks may
// choose differently.
class StoreChooser {
 public:
  enum class Mode { kAuto, kStreaming, kOrdinary };
  static constexpr uint64_t kTrialBytes = 32 << 20;
  // Copies this short are too quick to time well; they use ordinary stores and are not counted.
  static constexpr size_t kTimedMinBytes = 16 << 10;
  // Streaming stores must be this much faster to be kept: ordinary stores leave the output in
  // the caches, where the caller reads it next, and a near tie is within the trial's noise.
  static constexpr double kStreamingMargin = 1.03;
  // Longer copies are timed in pieces of this size, alternating between the kinds.
  static constexpr size_t kTrialPieceBytes = 1 << 20;

  // `what`: the work it chooses for, in its log line. With `warmUp`, run() does its work with
  // ordinary stores, untimed, until the caller calls warmedUp(): a peer's pages are mapped into
  // this process on their first touch, which costs both kinds the same and hides the difference
  // between them (on the Intel VM, 1.17x in a first message against 1.34x after it).
  explicit StoreChooser(Mode mode = Mode::kAuto, const char* what = "large copies into user buffers",
                        bool warmUp = false)
      : mode_(mode), what_(what), warmingUp_(warmUp) {}
  void warmedUp() { warmingUp_ = false; }
  // CFX_STREAMING_STORES: auto, 1 (always streaming) or 0 (never); throws kInvalidArgument otherwise.
  static Mode modeFromEnv();

  // Copies `bytes` (part of a message of `messageBytes`) with the stores chosen so far.
  void copy(void* dst, const void* src, size_t bytes, size_t messageBytes);
  // Runs work(streaming), which handles `bytes`, with the kind chosen so far; during the trial,
  // with the kind whose turn it is, timed and counted towards the choice. For work that is more
  // than a copy; the caller decides which messages are large enough.
  template <class Work>
  void run(size_t bytes, Work&& work) {
    if (mode_ != Mode::kAuto) {
      work(mode_ == Mode::kStreaming);
      return;
    }
    if (warmingUp_) {
      work(false);
      return;
    }
    const bool streaming = nextStreaming_;
    nextStreaming_ = !nextStreaming_;
    const int64_t start = threadNs();
    work(streaming);
    record(streaming, bytes, threadNs() - start);
  }
  // kAuto while the trial is still running.
  Mode mode() const { return mode_; }
  // The median GB/s of each kind's timed copies so far (0: none yet), in this thread's CPU time.
  double rate(bool streaming) const;

 private:
  // This thread's CPU time in ns: work preempted halfway (ranks outnumbering the cores) is not
  // charged for the time another process ran.
  static int64_t threadNs();
  // Counts one timed piece of work; decides once both kinds have handled kTrialBytes.
  void record(bool streaming, size_t bytes, int64_t ns);

  Mode mode_;
  const char* what_;
  bool warmingUp_;
  uint64_t bytes_[2] = {0, 0};     // [0]: ordinary, [1]: streaming
  std::vector<double> rates_[2];  // bytes per ns of each timed copy
  bool nextStreaming_ = true;
};

}  // namespace conflux
