#include "transport/shm/channel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "transport/shm/cma.h"

namespace conflux::shm {

size_t channelBytes(size_t slots, size_t slotBytes) { return sizeof(ChannelControl) + slots * slotBytes; }

Channel::Channel(std::byte* base, size_t slots, size_t slotBytes)
    : ctl_(reinterpret_cast<ChannelControl*>(base)),
      slots_(base + sizeof(ChannelControl)),
      nslots_(slots),
      slotBytes_(slotBytes) {}

bool Channel::progressSend(Transfer& t) {
  if (t.singleCopy && !t.complete()) return offerSend(t);
  bool moved = false;
  uint64_t head = ctl_->head.load(std::memory_order_relaxed);
  while (!t.complete()) {
    uint64_t tail = ctl_->tail.load(std::memory_order_acquire);
    if (head - tail >= nslots_) break;  // ring full
    std::byte* s = slot(head);
    size_t n = std::min(payloadBytes(), t.bytes - t.done);
    SlotHeader h{t.bytes, n, 0};
    std::memcpy(s, &h, sizeof(h));
    std::memcpy(s + dataOffset(n), t.data + t.done, n);
    t.done += n;
    ++head;
    ctl_->head.store(head, std::memory_order_release);
    moved = true;
  }
  return moved;
}

bool Channel::offerSend(Transfer& t) {
  if (t.offered != 0) {
    // The receiver consumes the offer's slot only after its copy: that is the acknowledgement.
    if (ctl_->tail.load(std::memory_order_acquire) < t.offered) return false;
    t.done = t.bytes;
    return true;
  }
  uint64_t head = ctl_->head.load(std::memory_order_relaxed);
  if (head - ctl_->tail.load(std::memory_order_acquire) >= nslots_) return false;  // ring full
  SlotHeader h{t.bytes, 0, reinterpret_cast<uint64_t>(t.data)};
  std::memcpy(slot(head), &h, sizeof(h));
  ctl_->head.store(head + 1, std::memory_order_release);
  t.offered = head + 1;
  return true;
}

bool Channel::progressRecv(Transfer& t, int srcRank, int dstRank, pid_t srcPid) {
  bool moved = false;
  t.wakeSender = false;
  uint64_t tail = ctl_->tail.load(std::memory_order_relaxed);
  const uint64_t firstTail = tail;
  while (!t.complete()) {
    uint64_t head = ctl_->head.load(std::memory_order_acquire);
    if (tail == head) break;  // ring empty
    const std::byte* s = slot(tail);
    SlotHeader h;
    std::memcpy(&h, s, sizeof(h));
    const bool offer = h.chunkBytes == 0;
    size_t expected = offer ? 0 : std::min(payloadBytes(), t.bytes - t.done);
    if (h.messageBytes != t.bytes || h.chunkBytes != expected || (offer && t.done != 0)) {
      throw Error(Status::kInvalidUsage, "send/recv size mismatch: rank " + std::to_string(srcRank) + " sent " +
                                             std::to_string(h.messageBytes) + " bytes but rank " +
                                             std::to_string(dstRank) + " posted a receive of " +
                                             std::to_string(t.bytes) + " bytes");
    }
    if (offer) {
      cmaRead(srcPid, srcRank, t.data, reinterpret_cast<const void*>(h.address), t.bytes);
      t.done = t.bytes;
    } else {
      std::memcpy(t.data + t.done, s + dataOffset(h.chunkBytes), h.chunkBytes);
      t.done += h.chunkBytes;
    }
    if (offer) t.wakeSender = true;  // the sender waits for the acknowledgement
    ++tail;
    ctl_->tail.store(tail, std::memory_order_release);
    moved = true;
  }
  if (moved && !t.wakeSender) {
    // A sender also waits on a full ring: it saw head - tail >= nslots for a tail from before these
    // stores. The fence pairs with the one in the sender's arm() (store head; arm; load tail):
    // either it sees the new tail, or this load sees the head that filled the ring.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ctl_->head.load(std::memory_order_relaxed) - firstTail >= nslots_) t.wakeSender = true;
  }
  return moved;
}

}  // namespace conflux::shm
