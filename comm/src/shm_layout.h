// How a communicator's shared-memory segment is laid out. The first rank of the host computes the
// layout and writes it into the header; the others read it from there, so a setting that differs
// between ranks cannot give them different views of the segment.
//
//   [Header][RankControl x n][staging slot x n][scratch][domain partial x g][p2p channel x n*n]
//
// Each staging slot, the scratch area and the domain partials are split in two halves used by
// alternate chunks, so one barrier per chunk separates writers from readers (see
// ops/collective.h). The g domain partials exist only for a two-level reduction (g >= 2 NUMA
// domains, topology/plan.h); the first rank also writes each rank's domain into its RankControl.
// Slots, scratch and partials start on page boundaries, so each can be placed on its own node.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/shm/doorbell.h"

namespace conflux {

inline constexpr uint64_t kSegmentMagic = 0x43465853484d3031ull;  // "CFXSHM01"
inline constexpr uint32_t kSegmentVersion = 15;

struct OpDescriptor {
  uint64_t seq = 0;
  int32_t coll = 0;
  int32_t datatype = 0;
  int32_t op = 0;
  int32_t root = 0;
  uint64_t count = 0;
  // A step of a collective call that spans hosts: that call, packed (ops/call_tag.h), and its
  // number among the communicator's collective calls; 0 for a call on one host.
  uint64_t outer = 0;
  uint32_t outerSeq = 0;
  uint32_t flags = 0;  // kDescAgreeOnBuffers, kDescSingleCopyReduce, kDescGatherTrial

  bool operator==(const OpDescriptor&) const = default;
};
inline constexpr uint32_t kDescAgreeOnBuffers = 1;   // CollArgs::agreeOnBuffers
inline constexpr uint32_t kDescSingleCopyReduce = 2;  // CollArgs::singleCopyReduce
inline constexpr uint32_t kDescGatherTrial = 4;       // CollArgs::gatherTrial
// The name of collective `coll` (Coll in ops/op.h, then the v-collectives' checks from 6:
// vector_mailbox_op.cc) for messages; "unknown collective" if out of range.
const char* collectiveName(int32_t coll);
inline constexpr int32_t kFirstVectorColl = 6;  // OpDescriptor::coll of AlltoAllv; AllGatherv, ReduceScatterv follow

// A small-message mailbox: the data, then the call, then the sequence number that publishes both
// (the latency path of ops/mailbox_op.cc; phased collectives announce their call here too).
// kMailboxSlots per rank, used in turn by sequence number: a rank whose operations wait for no one
// (Broadcast's root, Reduce's other ranks) may run up to CFX_RUNAHEAD (at most kMailboxSlots - 2)
// operations ahead of a slow reader (context.h, WaitSettings::runAhead).
// 2 KiB of data: AllReduce, Reduce, Broadcast and AllGather of 1-2 KiB per rank took the staged
// paths' barriers with 1 KiB mailboxes (2-rank, AMD EPYC VM, median of 11 rounds, us: AllReduce
// 2 KiB 0.79-0.85 -> 0.63, Reduce 0.64 -> 0.47, Broadcast 0.65 -> 0.52, AllGather of 4 KiB
// 0.78-0.85 -> 0.68; perf/RESULTS.md, 2026-11-29 (ninth)). AlltoAll and ReduceScatter, whose
// input is n blocks, stay at 1 KiB (kMailboxBlocksMaxBytes), and so do the v-collectives' lines.
inline constexpr size_t kMailboxBytes = 2048;
inline constexpr uint64_t kMailboxSlots = 128;
// The data follows the call with no gap, so a message of up to 8 bytes travels in the one cache
// line that also holds the sequence number and the call: its reader takes one miss, not two.
struct alignas(64) Mailbox {
  std::atomic<uint64_t> seq{0};
  OpDescriptor call;
  std::byte data[kMailboxBytes];
};
static_assert(offsetof(Mailbox, data) == 56, "the first 8 bytes of data share the sequence number's line");

// A v-collective's blocks on one host that its check's line has no room for (vector_coll.h,
// VectorLine) travel in a box of the sender's: kVectorBoxes per rank, used by operation number in
// turn. Operation s writes its box once every rank has finished operation s - kVectorBoxes, so
// every earlier operation that used that box, whichever order a group's operations published in.
// Two boxes let a rank write its next call's blocks while a slow peer still reads this one's.
// A block takes at most kVectorBoxBlockBytes of a box: larger ones went faster by Send/Recv, whose
// channel overlaps the sender's copy with the receiver's (2-rank AlltoAllv, ns per call, Send/Recv
// against the box: 16 KiB blocks 4,628 against 4,818, 32 KiB 4,845 against 7,309; 8 KiB 3,386
// against 2,999; perf/RESULTS.md, 2026-12-06 (third)).
inline constexpr size_t kVectorBoxBytes = 16384;
inline constexpr size_t kVectorBoxBlockBytes = 8192;
inline constexpr uint64_t kVectorBoxes = 2;
struct alignas(64) VectorBox {
  std::byte data[kVectorBoxBytes];
};

// A registered buffer a rank uses in its current collective (registry.h): the registration (id 0:
// the buffer is not registered), the buffer's offset in it, and what a peer needs to map it (the
// file descriptor in the owner's process, the whole mapping's size, the file's inode).
struct PublishedBuffer {
  uint64_t id = 0;
  uint64_t offset = 0;
  uint64_t mapBytes = 0;
  uint64_t inode = 0;
  int32_t fd = -1;
  int32_t reserved = 0;
};
// Registrations a rank dropped, newest last: ids[i % kFreedNotices] for i < count. A reader that
// fell more than kFreedNotices behind drops all its mappings of that rank.
inline constexpr uint64_t kFreedNotices = 32;
struct FreedNotices {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> ids[kFreedNotices];
};

struct alignas(64) RankControl {
  shm::Doorbell bell;
  alignas(64) std::atomic<uint64_t> arrived{0};  // last barrier this rank reached
  alignas(64) OpDescriptor desc[2];               // current op, double-buffered by sequence parity
  uint64_t cmaAddress[2][2];                      // the op's send and receive buffers for single copies, same parity
  PublishedBuffer buffers[2][2];                  // the op's registered send and recv buffers, same parity
  // Local rank 0's: the path of a large AllGather or Broadcast (ops/path_trial.h, GatherPath),
  // written before the op's first barrier, same parity.
  int32_t gatherPath[2];
  // Registered AllReduce and Reduce: how many spans of this rank's slice have been claimed, by
  // this rank or by a peer done with its own (ops/zero_copy.cc); same parity, reset by this rank
  // when it publishes its buffers. A line of its own: this rank bumps it once per span.
  alignas(64) std::atomic<uint64_t> spansClaimed[2];
  int32_t domain;                                 // two-level reduction: this rank's NUMA domain
  // While a wait of this rank sleeps: 1 + the local rank it waits for first, and 1 + the
  // communicator rank on another host it waits for first; 0 otherwise. A peer that times out
  // follows these to the rank that stalled, or to the network (stall.h).
  std::atomic<int32_t> waitingFor{0};
  std::atomic<int32_t> waitingAcross{0};
  // The last operation (sequence number) this rank finished; operations finish in order, so this
  // rank reads nothing of any operation at or below it any more.
  FreedNotices freed;                             // written by this rank's API calls only
  alignas(64) std::atomic<uint64_t> finished{0};
  Mailbox mailbox[kMailboxSlots];
  VectorBox vectorBox[kVectorBoxes];
};

struct SegmentHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t nranks;
  uint64_t totalBytes;
  uint64_t slotBytes;
  uint64_t p2pSlots;
  uint64_t p2pSlotBytes;
  uint32_t domains;  // 0 or >= 2
  // A failure, attributed to an operation: 0: healthy; r+1: rank r failed first, with this status
  // and message. It concerns the operations from number `poisonSeq` on (the lowest any failing rank
  // had not finished; 0: all, as an abort), so a rank still in an earlier one, whose peers all got
  // past it, finishes that first (context.h).
  alignas(64) std::atomic<int32_t> poisonedBy;
  int32_t poisonStatus;
  std::atomic<uint64_t> poisonSeq;
  char poisonMessage[512];
};

struct Layout {
  uint32_t nranks = 0;
  size_t slotBytes = 0;
  size_t p2pSlots = 0;
  size_t p2pSlotBytes = 0;
  uint32_t domains = 0;

  size_t controlOffset() const;
  size_t slotsOffset() const;
  size_t scratchOffset() const;
  size_t domainsOffset() const;
  size_t channelsOffset() const;
  size_t channelStride() const;
  // Where the channel from local rank s to local rank d begins.
  size_t channelOffset(int s, int d) const;
  size_t totalBytes() const;
  // The byte ranges [offset, offset + bytes) rank `rank` maps at init (Context), in order: the
  // control blocks, the staging slots with the scratch and the domains' slots, and each channel
  // that starts or ends at this rank (the others it never touches). Without it the first calls of
  // each path met pages untouched by this process, one page fault (about 30 us on the Intel Xeon
  // VM, every rank waiting) every few calls.
  struct Range {
    size_t offset, bytes;
  };
  std::vector<Range> mappedAtInit(int rank) const;

  // From the environment (CFX_SHM_SLOT_BYTES, CFX_SHM_P2P_BYTES), bounded and aligned.
  static Layout fromEnv(int nranks);
  static Layout fromHeader(const SegmentHeader& h);
  void writeHeader(SegmentHeader& h) const;
};

}  // namespace conflux
