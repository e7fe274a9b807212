// A one-directional, ordered point-to-point channel in shared memory: a ring of fixed-size slots
// written by the sender and consumed by the receiver. Both ends are non-blocking: progress moves
// what it can and says whether anything moved; the caller rings the other side's doorbell.
//
// Every slot carries the total size of the message it belongs to, so a receive that does not
// match the send in size is detected instead of silently truncating or over-reading.
//
// A slot also carries its own sequence number (1 + the index of the slot's message), stored last:
// the receiver polls the slot it expects, not a shared head counter, so a small message costs it
// one cache miss (header and data share a line), and the sender reads the receiver's tail only
// when its cached copy says the ring is full. The sender still keeps `head` in shared memory, in a
// line only it writes, for a reader that looks at the channel from outside.
//
// Single copy (rendezvous): for a large message the sender may publish one slot holding only the
// address of its buffer; the receiver copies the whole message straight from the sender's memory
// (cross-memory attach, cma.h) and consumes the slot, which is the sender's acknowledgement. The
// sender's transfer completes only then, so its buffer is never reused while being read; a send
// therefore waits for its receive, as NCCL's always do. Each slot says how it was sent, so the
// receiver needs no setting of its own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <sys/types.h>

namespace conflux::shm {

struct alignas(64) ChannelControl {
  std::atomic<uint64_t> head{0};  // slots published by the sender (the slots' own numbers are the signal)
  char pad0[56];
  std::atomic<uint64_t> tail{0};  // slots consumed by the receiver
  char pad1[56];
};

// Bytes needed for one channel with `slots` slots of `slotBytes` (header included).
size_t channelBytes(size_t slots, size_t slotBytes);

class Channel {
 public:
  Channel() = default;
  // `base` points to channelBytes(slots, slotBytes) bytes of zeroed shared memory.
  Channel(std::byte* base, size_t slots, size_t slotBytes);

  struct Transfer {
    std::byte* data = nullptr;  // source for a send, destination for a receive
    size_t bytes = 0;
    size_t done = 0;            // bytes moved so far
    bool singleCopy = false;    // sender: offer the buffer for a single copy (set before the first progress)
    uint64_t offered = 0;       // sender, single copy: 1 + the slot of the offer, once published
    bool wakeSender = false;    // receiver: the last progress freed a full ring or acknowledged an
                                // offer, so the sender may be waiting for it (ring its doorbell)
    bool complete() const { return done >= bytes; }
  };

  // Sender side. Returns true if any slot was published (or a single copy was acknowledged).
  bool progressSend(Transfer& t);
  // Receiver side. Returns true if any slot was consumed. Throws Error(kInvalidUsage) if the
  // sender's message size differs from t.bytes; a single copy reads from process `srcPid`.
  bool progressRecv(Transfer& t, int srcRank, int dstRank, pid_t srcPid);

  size_t payloadBytes() const { return slotBytes_ - kHeaderBytes; }

 private:
  static constexpr size_t kHeaderBytes = 64;
  struct SlotHeader {
    uint64_t seq;  // 1 + the index of the message in this slot; stored last, with release
    uint64_t messageBytes;
    uint64_t chunkBytes;  // 0: a single-copy offer, whose data is the sender's buffer address
  };
  // A chunk this small travels in the header's cache line, right after it: its reader takes one
  // miss, not two. Larger chunks start at kHeaderBytes, aligned.
  static constexpr size_t kInlineBytes = kHeaderBytes - sizeof(SlotHeader);
  static size_t dataOffset(size_t chunkBytes) { return chunkBytes <= kInlineBytes ? sizeof(SlotHeader) : kHeaderBytes; }
  bool offerSend(Transfer& t);
  // Sender: whether slot `head` is free, reading the receiver's tail only when the cached one says no.
  bool hasRoom(uint64_t head);
  // Sender: fills slot `head`'s header and makes the slot visible (its data must be written already).
  void publish(uint64_t head, size_t messageBytes, size_t chunkBytes);
  uint64_t slotSeq(uint64_t i) const;
  std::byte* slot(uint64_t i) const { return slots_ + (i % nslots_) * slotBytes_; }

  ChannelControl* ctl_ = nullptr;
  std::byte* slots_ = nullptr;
  size_t nslots_ = 0;
  size_t slotBytes_ = 0;
  uint64_t tailSeen_ = 0;  // sender: the receiver's tail when last read
};

}  // namespace conflux::shm
