// Copies into user buffers, and into staging slots (StoreChooser::copyToSlot). Messages much
// larger than the caches may be written with non-temporal (streaming) stores: the destination is
// not read for ownership first and does not evict the staging buffers, which saves a third of the
// memory traffic of the final copy, on machines whose streaming stores are fast. On others they
// are slower than ordinary stores, so each rank chooses (StoreChooser).
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
// default) a rank tries both and keeps the faster for the communicator's life, in each size class
// of messages (sizeClass: 8-32 MiB, 32-128, 128-512, and more), each with a trial of its own: a
// message that fits the last-level cache keeps its output there with ordinary stores, one that
// does not saves the reads for ownership with streaming stores, so a choice made on 16 MiB does not
// hold at 256 MiB (2-rank AllReduce out of place on the Intel Xeon VM, 480 MiB of L3: 4.1 GB/s at
// 256 MiB after a choice made at 16 MiB, 5.2 with streaming stores; perf/RESULTS.md, 2026-11-29).
//   copy() from 32 MiB: whole messages alternate between the kinds, ordinary stores first, each
//           timed on the wall clock from its first copy to its last, after one untimed message per
//           class (its first touches cost both kinds alike) written with streaming stores, the
//           kind that saves the reads for ownership of messages this large: where they are the
//           faster, the trial then spends one message on the slower kind, not three (2-rank
//           AllReduce of 64 and 256 MiB, `-n 5 -w 2`, on the Intel Xeon VM: 15.1 and 61.6 ms ->
//           13.5 and 54.0, forced streaming stores 13.1 and 54.4; perf/RESULTS.md, 2026-12-01).
//           A copy timed alone flatters ordinary stores: the dirty
//           lines they leave are written back during the path's other passes, where a streaming
//           store paid at once (there: copies timed alone kept ordinary stores at 9.2-9.8 GB/s
//           against 8.5-8.7, and the calls ran at 3.9-4.3 GB/s busbw against 4.8-5.8 with
//           streaming stores);
//   copy() under 32 MiB, and run(): pieces of work alternate, each timed in the thread's CPU time
//           (a piece preempted halfway is not charged for the other process): copies of messages
//           the last-level cache may hold, where a trial of whole messages cost more than it found
//           (2-rank AllReduce of 16 MiB, 20 calls: 5.9-6.1 GB/s against 6.6-6.7 with the ordinary
//           stores it kept), and registered reductions, whose pieces each stream into every output.
// A class decides (decide()) once each kind has kTrialBytes and kTrialSamples samples, or a single
// sample each that are kDecisiveMargin apart; the kind with the higher median rate then stays. The
// choice changes only the speed, never the bytes written, so ranks may choose differently.
class StoreChooser {
 public:
  enum class Mode { kAuto, kStreaming, kOrdinary };
  static constexpr uint64_t kTrialBytes = 32 << 20;
  // Streaming stores must be this much faster to be kept: ordinary stores leave the output in
  // the caches, where the caller reads it next, and a near tie is within the trial's noise.
  static constexpr double kStreamingMargin = 1.03;
  // Copies shorter than this (timed by the piece) are too quick to time well; they use ordinary
  // stores and are not counted.
  static constexpr size_t kTimedMinBytes = 16 << 10;
  // Copies timed by the piece are cut into pieces of this size, alternating between the kinds.
  static constexpr size_t kTrialPieceBytes = 1 << 20;
  // Samples (messages, or pieces of run()'s work) of each kind before a class decides.
  static constexpr size_t kTrialSamples = 2;
  // One sample of each decides when one kind's rate is this many times the other's: a gap this
  // wide is past a sample's noise, and the second round of a whole-message trial would cost a
  // message of the slower kind. Streaming against ordinary stores, 2-rank AllReduce of 64 and
  // 256 MiB on the Intel Xeon VM: 5.02-5.06 GB/s against 3.80-3.84 (1.31-1.33x); run to run, the
  // same kind's calls varied by under 10% there (perf/RESULTS.md, 2026-12-01).
  static constexpr double kDecisiveMargin = 1.2;
  // Size classes of messages from kStreamingMinBytes, each 4x the last; the last has no end.
  static constexpr int kSizeClasses = 4;
  static int sizeClass(size_t messageBytes);
  // The verdict of a trial with these samples (bytes per ns) and bytes of each kind: kAuto while
  // it needs more.
  static Mode decide(const std::vector<double>& ordinary, const std::vector<double>& streaming,
                     uint64_t ordinaryBytes, uint64_t streamingBytes);

  // `what`: the work it chooses for, in its log line. With `warmUp`, run() does its work with
  // ordinary stores, untimed, until the caller calls warmedUp(): a peer's pages are mapped into
  // this process on their first touch, which costs both kinds the same and hides the difference
  // between them (on the Intel VM, 1.17x in a first message against 1.34x after it).
  explicit StoreChooser(Mode mode = Mode::kAuto, const char* what = "large copies into user buffers",
                        bool warmUp = false)
      : what_(what), warmingUp_(warmUp) {
    for (Trial& t : trials_) t.mode = mode;
  }
  void warmedUp() { warmingUp_ = false; }
  // CFX_STREAMING_STORES: auto, 1 (always streaming) or 0 (never); throws kInvalidArgument otherwise.
  static Mode modeFromEnv();

  // Copies `bytes`, part of message `message` (its operation's sequence number: increasing) of
  // `messageBytes`, with the stores chosen so far, or during the trial with the kind of that
  // message.
  void copy(void* dst, const void* src, size_t bytes, size_t messageBytes, uint64_t message);
  // Copies `bytes` into this rank's staging slot, which the peers read next, for a Broadcast,
  // AllGather or AlltoAll that stages `stagedBytes` in all. From kStagingStreamingMinBytes the
  // stores are streaming (unless CFX_STREAMING_STORES=0), with no trial: the slot then reaches the
  // peers from memory rather than from this core's cache. On the AMD EPYC VM the hypervisor at times
  // places the two vCPUs where lines moving between their caches cross at half speed or less, for
  // tens of seconds at a time. 2-rank AllGather of 64 MiB then took 20-22 ms with ordinary stores
  // into the slots and 7.7-10.7 with streaming ones (Open MPI 8.8-11.7), and outside those spells
  // 9.0-9.4 against 9.4-9.5 (one 12.0); Broadcast of 256 MiB 37-48 against 39-43 (perf/RESULTS.md,
  // 2026-11-29, tenth). A trial made outside a spell would keep ordinary stores, so there is none.
  // The reductions, which streaming stores made 10-20% slower outside the spells, try both kinds
  // again and again instead (ops/handoff_stores.h).
  static constexpr size_t kStagingStreamingMinBytes = 16 << 20;
  void copyToSlot(void* slot, const void* src, size_t bytes, size_t stagedBytes) const;
  // Runs work(streaming), which handles `bytes` of a message of `messageBytes`, with the kind
  // chosen so far for its size class; during that class's trial, with the kind whose turn it is,
  // timed and counted towards the choice. For work that is more than a copy; the caller decides
  // which messages are large enough.
  template <class Work>
  void run(size_t bytes, size_t messageBytes, Work&& work) {
    Trial& t = trials_[sizeClass(messageBytes)];
    if (t.mode != Mode::kAuto) {
      work(t.mode == Mode::kStreaming);
      return;
    }
    if (warmingUp_) {
      work(false);
      return;
    }
    const bool streaming = t.nextStreaming;
    t.nextStreaming = !t.nextStreaming;
    const int64_t start = threadNs();
    work(streaming);
    record(t, streaming, bytes, threadNs() - start);
  }
  // The choice for messages of `messageBytes`' size class; kAuto while its trial is still running.
  Mode mode(size_t messageBytes = kStreamingMinBytes) const { return trials_[sizeClass(messageBytes)].mode; }
  // The median GB/s of each kind's timed copies so far in that class (0: none yet), in this
  // thread's CPU time.
  double rate(bool streaming, size_t messageBytes = kStreamingMinBytes) const;

 private:
  // This thread's CPU time in ns: work preempted halfway (ranks outnumbering the cores) is not
  // charged for the time another process ran.
  static int64_t threadNs();
  static int64_t wallNs();
  // One size class's trial and choice.
  struct Trial {
    Mode mode = Mode::kAuto;
    uint64_t bytes[2] = {0, 0};     // [0]: ordinary, [1]: streaming
    std::vector<double> rates[2];  // bytes per ns of each sample
    bool nextStreaming = true;
    bool warm = false;  // copy(): its untimed first message went by
  };
  // The message copy() is copying during a trial.
  struct Message {
    uint64_t id = 0;
    int sizeClass = 0;
    bool streaming = false;
    bool timed = false;  // a sample (not a class's first message, nor disturbed by another)
    size_t bytes = 0;
    int64_t start = 0, end = 0;  // wall clock: its first copy's start, its last copy's end
  };
  // Counts one sample; decides as decide() says.
  void record(Trial& t, bool streaming, size_t bytes, int64_t ns);
  // Ends the current message (a sample, if timed) and starts `id`.
  void startMessage(uint64_t id, size_t messageBytes);

  const char* what_;
  bool warmingUp_;
  Trial trials_[kSizeClasses];
  Message current_;
};

}  // namespace conflux
