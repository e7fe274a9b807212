#include "shm_layout.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>

#include "common/arith.h"
#include "common/env.h"
#include "common/error.h"
#include "transport/shm/channel.h"

namespace conflux {

const char* collectiveName(int32_t coll) {
  static const char* const kNames[] = {"AllReduce",  "Reduce",    "Broadcast",  "AllGather",     "ReduceScatter",
                                       "AlltoAll",   "AlltoAllv", "AllGatherv", "ReduceScatterv"};
  return (coll >= 0 && coll < static_cast<int32_t>(std::size(kNames))) ? kNames[coll] : "unknown collective";
}

namespace {
constexpr size_t kPage = 4096;
}  // namespace

size_t Layout::controlOffset() const { return roundUp(sizeof(SegmentHeader), kPage); }
size_t Layout::slotsOffset() const { return roundUp(controlOffset() + nranks * sizeof(RankControl), kPage); }
size_t Layout::scratchOffset() const { return slotsOffset() + nranks * slotBytes; }
size_t Layout::domainsOffset() const { return scratchOffset() + slotBytes; }
size_t Layout::channelsOffset() const { return domainsOffset() + domains * slotBytes; }
size_t Layout::channelStride() const { return roundUp(shm::channelBytes(p2pSlots, p2pSlotBytes), kPage); }
size_t Layout::channelOffset(int s, int d) const {
  return channelsOffset() + (static_cast<size_t>(s) * nranks + static_cast<size_t>(d)) * channelStride();
}

std::vector<Layout::Range> Layout::mappedAtInit(int rank) const {
  std::vector<Range> out{{controlOffset(), slotsOffset() - controlOffset()},
                         {slotsOffset(), channelsOffset() - slotsOffset()}};
  const int n = static_cast<int>(nranks);
  for (int s = 0; s < n; ++s) {
    for (int d = 0; d < n; ++d) {
      if (s == rank || d == rank) out.push_back({channelOffset(s, d), channelStride()});
    }
  }
  return out;
}

size_t Layout::totalBytes() const { return channelsOffset() + static_cast<size_t>(nranks) * nranks * channelStride(); }

Layout Layout::fromEnv(int nranks) {
  Layout l;
  l.nranks = static_cast<uint32_t>(nranks);
  // Each slot half must hold at least one cache line per rank (reduce-scatter stages n blocks).
  size_t minSlot = roundUp(2 * 64 * 8 * static_cast<size_t>(nranks), kPage);
  int64_t slot = env::getInt("CFX_SHM_SLOT_BYTES");
  if (slot <= 0) throw Error(Status::kInvalidArgument, "CFX_SHM_SLOT_BYTES must be positive");
  l.slotBytes = std::clamp(roundUp(static_cast<size_t>(slot), kPage), minSlot, size_t{1} << 30);
  int64_t p2p = env::getInt("CFX_SHM_P2P_BYTES");
  if (p2p <= 0) throw Error(Status::kInvalidArgument, "CFX_SHM_P2P_BYTES must be positive");
  size_t perChannel = static_cast<size_t>(p2p) / (static_cast<size_t>(nranks) * nranks);
  perChannel = std::clamp(perChannel, size_t{16} << 10, size_t{1} << 20);
  l.p2pSlots = 4;
  l.p2pSlotBytes = roundUp(perChannel / l.p2pSlots, size_t{64});
  return l;
}

Layout Layout::fromHeader(const SegmentHeader& h) {
  if (h.magic != kSegmentMagic || h.version != kSegmentVersion) {
    throw Error(Status::kInternalError, "shared-memory segment has a bad magic or version");
  }
  Layout l;
  l.nranks = h.nranks;
  l.slotBytes = h.slotBytes;
  l.p2pSlots = h.p2pSlots;
  l.p2pSlotBytes = h.p2pSlotBytes;
  l.domains = h.domains;
  if (l.domains == 1 || l.domains > l.nranks) throw Error(Status::kInternalError, "shared-memory segment: bad domain count");
  if (l.totalBytes() != h.totalBytes) throw Error(Status::kInternalError, "shared-memory segment size mismatch");
  return l;
}

void Layout::writeHeader(SegmentHeader& h) const {
  h.nranks = nranks;
  h.totalBytes = totalBytes();
  h.slotBytes = slotBytes;
  h.p2pSlots = p2pSlots;
  h.p2pSlotBytes = p2pSlotBytes;
  h.domains = domains;
  h.poisonSeq.store(UINT64_MAX, std::memory_order_relaxed);  // healthy: no operation concerned
  h.version = kSegmentVersion;
  std::atomic_thread_fence(std::memory_order_release);
  h.magic = kSegmentMagic;
}

}  // namespace conflux
