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

uint64_t Channel::slotSeq(uint64_t i) const {
  auto* seq = reinterpret_cast<uint64_t*>(slot(i));
  return std::atomic_ref<uint64_t>(*seq).load(std::memory_order_acquire);
}

bool Channel::hasRoom(uint64_t head) {
  if (head - tailSeen_ < nslots_) return true;
  tailSeen_ = ctl_->tail.load(std::memory_order_acquire);
  return head - tailSeen_ < nslots_;
}

void Channel::publish(uint64_t head, size_t messageBytes, size_t chunkBytes) {
  std::byte* s = slot(head);
  auto* h = reinterpret_cast<SlotHeader*>(s);
  h->messageBytes = messageBytes;
  h->chunkBytes = chunkBytes;
  std::atomic_ref<uint64_t>(h->seq).store(head + 1, std::memory_order_release);
  ctl_->head.store(head + 1, std::memory_order_relaxed);
}

bool Channel::progressSend(Transfer& t) {
  if (t.singleCopy && !t.complete()) return offerSend(t);
  bool moved = false;
  uint64_t head = ctl_->head.load(std::memory_order_relaxed);
  while (!t.complete() && hasRoom(head)) {
    size_t n = std::min(payloadBytes(), t.bytes - t.done);
    std::memcpy(slot(head) + dataOffset(n), t.data + t.done, n);
    publish(head, t.bytes, n);
    t.done += n;
    ++head;
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
  if (!hasRoom(head)) return false;
  const uint64_t address = reinterpret_cast<uint64_t>(t.data);
  std::memcpy(slot(head) + dataOffset(0), &address, sizeof(address));
  publish(head, t.bytes, 0);
  t.offered = head + 1;
  return true;
}

bool Channel::progressRecv(Transfer& t, int srcRank, int dstRank, pid_t srcPid) {
  bool moved = false;
  t.wakeSender = false;
  uint64_t tail = ctl_->tail.load(std::memory_order_relaxed);
  const uint64_t firstTail = tail;
  while (!t.complete()) {
    if (slotSeq(tail) != tail + 1) break;  // not published yet
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
      uint64_t address;
      std::memcpy(&address, s + dataOffset(0), sizeof(address));
      cmaRead(srcPid, srcRank, t.data, reinterpret_cast<const void*>(address), t.bytes);
      t.done = t.bytes;
      t.wakeSender = true;  // the sender waits for the acknowledgement
    } else {
      std::memcpy(t.data + t.done, s + dataOffset(h.chunkBytes), h.chunkBytes);
      t.done += h.chunkBytes;
    }
    ++tail;
    ctl_->tail.store(tail, std::memory_order_release);
    moved = true;
  }
  if (moved && !t.wakeSender) {
    // A sender also waits on a full ring: it saw head - tail >= nslots for a tail from before these
    // stores, so it had published message firstTail + nslots - 1. The fence pairs with the one in
    // the sender's arm() (publish; arm; load tail): either it sees the new tail, or this load sees
    // the slot that filled the ring.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint64_t last = firstTail + nslots_ - 1;
    if (slotSeq(last) == last + 1) t.wakeSender = true;
  }
  return moved;
}

}  // namespace conflux::shm
