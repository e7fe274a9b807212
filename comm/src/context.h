// The context is everything an algorithm may touch: this rank's place in the communicator, the
// shared staging memory, barriers, point-to-point channels, and the waiting policy. Algorithms
// never see a socket, a segment name or a process id (Gloo's separation of algorithm and
// transport).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "ops/copy.h"
#include "ops/handoff_stores.h"
#include "ops/path_trial.h"
#include "health.h"
#include "registered_buffers.h"
#include "shm_layout.h"
#include "transport/shm/channel.h"
#include "transport/shm/segment.h"

namespace conflux {

struct WaitSettings {
  int spin = 2000;                               // polls before yielding, then sleeping
  int yields = 8;                                // idle polls that yield the core before sleeping
  std::chrono::milliseconds timeout{300000};     // no progress for this long: kTimeout
  std::chrono::milliseconds livenessPeriod{200}; // how often sleeping waiters check peers
  // A wait whose stall lies on another host waits this much longer than the timeout for a notice
  // from there: the ranks on that host may see the stalled rank, and their notice names it.
  std::chrono::milliseconds networkGrace{2000};
  // Latency-path calls that may have returned before every rank's call was confirmed (CFX_RUNAHEAD,
  // 1 to kMaxRunAhead): how far a rank may run ahead of the slowest, and how many calls later a
  // mismatch surfaces at the latest (engine.h).
  // The default is the most the mailboxes allow: 4-rank Broadcast of 8-256 B on 2 CPUs took
  // 0.36-0.39 us with 32, 0.30-0.31 with 64 and 0.25-0.28 with 126 (128 mailboxes; Open MPI
  // 0.29-0.76), Reduce 0.42-0.59, 0.36-0.40 and 0.35-0.39; 2 ranks the same with any window
  // (perf/RESULTS.md, 2026-11-29 (ninth)).
  static constexpr int kMaxRunAhead = static_cast<int>(kMailboxSlots) - 2;
  static constexpr int kDefaultRunAhead = kMaxRunAhead;
  int runAhead = kDefaultRunAhead;
  // `ownCpus`: each local rank can have a CPU of its own (topology::eachHasOwnCpu), so a wait may
  // spin; otherwise it hands its core over at once.
  static WaitSettings fromEnv(int timeoutMsOverride, bool ownCpus);
};

// Throws Error(kInvalidUsage) describing both calls.
[[noreturn]] void throwMismatch(int myRank, const OpDescriptor& mine, int otherRank, const OpDescriptor& theirs);

class Context {
 public:
  Context(shm::Segment segment, int rank, std::vector<pid_t> pids, WaitSettings wait);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The communicator rank of local rank `r`, for messages (they differ when ranks span hosts).
  int commRank(int r) const { return commRanks_.empty() ? r : commRanks_[r]; }
  void setCommRanks(std::vector<int> ranks) { commRanks_ = std::move(ranks); }
  const WaitSettings& wait() const { return wait_; }

  // Staging memory: rank r's slot half for global chunk number `chunk`, and the shared scratch
  // half. Halves alternate with the chunk number, so writers of chunk k and readers of chunk k-1
  // never touch the same bytes.
  size_t halfBytes() const { return layout_.slotBytes / 2; }
  std::byte* slotHalf(int r, uint64_t chunk) const;
  std::byte* scratchHalf(uint64_t chunk) const;
  // Memory of this rank's own for one operation's work (64-byte aligned, at least `bytes`, not
  // zeroed; valid until the next call). Kept between calls: a fresh zeroed block per call cost
  // more than a 2-rank Reduce of 8 KiB over single copies takes.
  std::byte* privateScratch(size_t bytes);
  // Which stores this rank's large copies into user buffers use (ops/copy.h): only the thread
  // running this communicator's work touches it.
  StoreChooser& stores() { return stores_; }
  // The same choice for AllReduce and Reduce on registered buffers, which time their own work
  // (ops/zero_copy.cc): a copy there is faster or slower by which output it writes.
  StoreChooser& zeroCopyStores() { return zeroCopyStores_; }
  // Which stores this rank's staged reductions hand their data to the peers with (ops/handoff_stores.h).
  HandoffStores& handoffs() { return handoffs_; }
  // Local rank 0's choice between the staged path and the single copy for large AllGather and
  // Broadcast (ops/path_trial.h); its choice for operation `seq`, published before that op's first
  // barrier, read by every rank after it.
  PathTrial& gatherPaths() { return gatherPaths_; }
  void publishGatherPath(uint64_t seq, GatherPath p) { control(rank_).gatherPath[seq & 1] = static_cast<int32_t>(p); }
  GatherPath gatherPath(uint64_t seq) const { return static_cast<GatherPath>(control(0).gatherPath[seq & 1]); }
  // Two-level reduction (see shm_layout.h): the NUMA domains of the local ranks (0: flat), the
  // ranks of domain d (ascending), and domain d's partial-sum half for chunk `chunk`.
  int domains() const { return static_cast<int>(layout_.domains); }
  int domainOf(int r) const { return domainOf_[r]; }
  const std::vector<int>& domainRanks(int d) const { return domainRanks_[d]; }
  std::byte* domainHalf(int d, uint64_t chunk) const;
  // Reserves `n` consecutive global chunk numbers; returns the first.
  uint64_t reserveChunks(uint64_t n);
  uint64_t nextOpSeq() { return ++opSeq_; }

  // Barrier: arrive() publishes this rank's arrival and wakes sleeping peers; allArrived() polls.
  uint64_t arrive();
  bool allArrived(uint64_t barrier) const;
  std::vector<int> notArrived(uint64_t barrier) const;

  // Collective descriptors, checked after the first barrier of every collective so that ranks
  // calling different collectives (or with different counts) fail with a clear error.
  void publish(const OpDescriptor& d);
  void checkDescriptors(const OpDescriptor& mine) const;

  // Single-copy collectives: the buffers of operation `seq` this rank's peers read from (send) or
  // write into (recv), and the pid to reach them in.
  void publishCmaAddress(uint64_t seq, const void* send, const void* recv = nullptr) {
    control(rank_).cmaAddress[seq & 1][0] = reinterpret_cast<uint64_t>(send);
    control(rank_).cmaAddress[seq & 1][1] = reinterpret_cast<uint64_t>(recv);
  }
  const void* cmaAddress(int r, uint64_t seq) const {
    return reinterpret_cast<const void*>(control(r).cmaAddress[seq & 1][0]);
  }
  void* cmaRecvAddress(int r, uint64_t seq) const {
    return reinterpret_cast<void*>(control(r).cmaAddress[seq & 1][1]);
  }
  pid_t pid(int r) const { return pids_[r]; }

  // Registered buffers: registrations, and where each rank's buffers of an operation lie.
  RegisteredBuffers& registered() { return registered_; }
  const RegisteredBuffers& registered() const { return registered_; }

  // Small-message mailboxes (see shm_layout.h).
  Mailbox& mailbox(int r, uint64_t seq) const { return control(r).mailbox[seq % kMailboxSlots]; }
  // The operation this rank's mailbox for `seq` last published (0: none), from a private copy:
  // loading the mailbox's own sequence number missed whenever its reader had taken the line, and
  // the store that followed then waited for a second transfer (2-rank Broadcast and Reduce of 8 B,
  // root: about 0.22 -> 0.15 us per call on the Intel Xeon VM, perf/RESULTS.md 2026-12-02 (third)).
  uint64_t heldInMailbox(uint64_t seq) const { return held_[seq % kMailboxSlots]; }
  // Publishes this rank's mailbox `box` for operation `seq` (the data and the call written first).
  void publishMailbox(Mailbox& box, uint64_t seq) {
    held_[seq % kMailboxSlots] = seq;
    box.seq.store(seq, std::memory_order_release);
  }
  // A v-collective's box of rank r for operation `seq` (shm_layout.h).
  std::byte* vectorBox(int r, uint64_t seq) const { return control(r).vectorBox[seq % kVectorBoxes].data; }
  // This rank finished operation `seq`. The peers (one may wait to reuse a mailbox) are woken by
  // the next ringAll() or flushRing(): a latency-path call finishes the previous call and publishes
  // its own in one step, so both share one fence and one look at the peers' doorbells.
  void finishOp(uint64_t seq);
  uint64_t finishedByMe() const { return control(rank_).finished.load(std::memory_order_relaxed); }
  // Whether every rank finished operation `seq` (0: always); those that did not go to `lagging`.
  // Inline where the answer is already known (the usual case: a mailbox's last operation is long
  // finished), so every latency-path call does not pay a call for it.
  bool allFinished(uint64_t seq, std::vector<int>* lagging = nullptr) const {
    if (lagging == nullptr && seq <= finishedByAll_.load(std::memory_order_relaxed)) return true;
    return readFinished(seq, lagging);
  }
  // Whether some other rank finished operation `seq`.
  bool somePeerFinished(uint64_t seq) const;

  shm::Channel& sendChannel(int peer) { return channels_[static_cast<size_t>(rank_) * size_ + peer]; }
  shm::Channel& recvChannel(int peer) { return channels_[static_cast<size_t>(peer) * size_ + rank_]; }
  void ring(int peer);
  void ringAll();
  // Wakes the peers if a finished operation has not yet been announced (finishOp). The executor
  // calls it whenever its work stops moving and before it returns.
  void flushRing() {
    if (ringOwed_) ringAll();
  }
  // A latency-path call published into its mailbox: the peers are woken by the flushRing() that
  // ends the call or starts its wait, so the store drains while the call reads its peers' lines
  // instead of under ringAll's fence.
  void oweRing() { ringOwed_ = true; }
  // flushRing() in two halves, for a caller that executes a locked instruction between them (the
  // engine's release): takeRingOwed() under the engine, then ringArmedAfterLocked() with the
  // publication already ordered before the doorbells' loads, so the call pays no fence of its own.
  bool takeRingOwed() { return std::exchange(ringOwed_, false); }
  void ringArmedAfterLocked() const;

  // Waiting support for the executor.
  shm::Doorbell& myBell() const;
  // Aborts, failures every rank sees, dead peers and timeouts (health.h).
  Health& health() { return health_; }
  const Health& health() const { return health_; }

 private:
  void ringArmed() const;  // rings every peer whose doorbell is armed (the caller fenced)
  RankControl& control(int r) const { return controls_[r]; }
  SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(segment_.data()); }

  shm::Segment segment_;
  Layout layout_;
  RankControl* controls_ = nullptr;  // every rank's control block in segment_ (inline: every call reads it)
  int rank_;
  int size_;
  std::vector<pid_t> pids_;
  std::vector<int> commRanks_;
  WaitSettings wait_;
  std::vector<shm::Channel> channels_;
  StoreChooser stores_{StoreChooser::modeFromEnv()};
  StoreChooser zeroCopyStores_{StoreChooser::modeFromEnv(), "registered AllReduce, Reduce and ReduceScatter", true};
  HandoffStores handoffs_{StoreChooser::modeFromEnv()};
  PathTrial gatherPaths_{PathTrial::modeFromEnv()};
  RegisteredBuffers registered_;
  Health health_;
  // allFinished from the peers' counters.
  bool readFinished(uint64_t seq, std::vector<int>* lagging) const;
  // The lowest operation every rank had finished when last read: allFinished answers from it
  // without touching the peers' cache lines (their counters only grow).
  mutable std::atomic<uint64_t> finishedByAll_{0};
  // The highest operation some peer had finished when last read (somePeerFinished): the root of a
  // run of Broadcasts confirms its early calls from one read of that line, not one per call, each
  // a miss while the peer finishes a call at a time.
  mutable std::atomic<uint64_t> finishedBySomePeer_{0};
  std::unique_ptr<std::byte[]> private_;  // privateScratch
  size_t privateBytes_ = 0;
  bool ringOwed_ = false;  // finishOp stored `finished` without waking the peers yet
  std::vector<int> domainOf_;
  std::vector<std::vector<int>> domainRanks_;
  uint64_t barrierSeq_ = 0;
  uint64_t chunkSeq_ = 0;
  uint64_t opSeq_ = 0;
  uint64_t held_[kMailboxSlots] = {};  // heldInMailbox
};

}  // namespace conflux
