// The flight recorder of one communicator: its most recent operations in a fixed ring, so that a
// stall or a failure can be explained after the fact, or while it happens (PyTorch's flight
// recorder, NCCL's RAS): which operation this rank is in, since when, and whom it waits for.
//
// Recording is cheap enough for the latency path (about 0.02 us per call, measured on 2 ranks):
// one locked exchange takes the writers' lock for a record or a group's records (the counters are
// plain under it), the fields are relaxed atomic stores under a per-slot sequence lock, and the
// time comes from the coarse monotonic clock (a few ns, a few ms of resolution), read once per
// operation or group. Readers (a dump, possibly on another thread while
// operations run) take a consistent copy of each slot and retry a slot being rewritten.
// What an operation waits for is recorded only when its wait goes to sleep, with the text the
// timeout message would carry.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace conflux::flight {

enum class State : uint8_t { kQueued, kRunning, kWaiting, kDone, kFailed };
const char* stateName(State s);

// What is known of an operation when it is created. `name` is a string literal.
struct Call {
  const char* name;    // "AllReduce", ..., "Send", "Recv"
  size_t count = 0;    // elements (bytes for Send and Recv)
  int datatype = -1;   // cfxDataType_t, -1 for Send and Recv
  int redop = -1;      // cfxRedOp_t where the collective reduces, else -1
  int root = -1;       // the root, or the peer of Send and Recv, else -1
  bool p2p = false;
  bool isRecv = false;
};

// One operation as read back. `seq` numbers collectives in call order on the communicator (the
// same on every rank of a correct program), and Send/Recv per (peer, direction).
struct Record {
  uint64_t id = 0;  // position in this communicator's history, from 1
  int64_t seq = 0;
  Call call;
  State state = State::kQueued;
  bool ran = false;       // it started running (a refused or still queued one did not)
  int64_t queuedNs = 0;  // coarse monotonic
  int64_t endedNs = 0;   // when it failed (not kept for operations that complete: the next one's queuedNs is close)
  std::vector<int> waitingFor;                       // communicator ranks, at the last sleep
  std::string detail;                                // the wait's description, at the last sleep
};

// Identifies the communicator in dumps.
struct Identity {
  uint64_t commHash = 0;
  int rank = 0;
  int nranks = 0;
  std::string host;   // hostname
  int hostIndex = 0;  // among the communicator's hosts (tells apart hosts that share a hostname)
};

class Recorder {
 public:
  // `capacity` operations are kept (rounded up to a power of two, at least 8).
  Recorder(Identity who, size_t capacity);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Records a new operation as queued and returns its id.
  uint64_t add(const Call& c) { return add(c, now()); }
  // The same with the time it was queued read by the caller (one read for a group's operations).
  uint64_t add(const Call& c, int64_t queuedNs) { return Writing(*this).add(c, queuedNs); }
  // Records several operations (a group's) under one hold of the writers' lock.
  class Writing {
   public:
    explicit Writing(Recorder& r) : r_(r) { r_.lockWriters(); }
    ~Writing() { r_.unlockWriters(); }
    Writing(const Writing&) = delete;
    Writing& operator=(const Writing&) = delete;
    uint64_t add(const Call& c, int64_t queuedNs) { return r_.write(c, queuedNs); }

   private:
    Recorder& r_;
  };
  // Ids of 0 (operations not recorded) are ignored by the updates below.
  void started(uint64_t id);
  // `ranks` are communicator ranks.
  void waiting(uint64_t id, const std::vector<int>& ranks, std::string detail);
  // Inline: every call ends here, most of them done.
  void finished(uint64_t id, bool ok) {
    Slot* s = slotOf(id);
    if (s == nullptr) return;
    if (!ok) return failed(*s);
    s->state.store(static_cast<uint8_t>(State::kDone), std::memory_order_relaxed);
  }
  // The communicator failed: every operation not done is marked failed, keeping what it waited for.
  void failAll(const std::string& reason);

  const Identity& identity() const { return who_; }
  std::string failure() const;
  // Oldest first; at most `capacity` operations.
  std::vector<Record> snapshot() const;

  static int64_t now();  // coarse monotonic ns

 private:
  // Written by add() under the sequence lock `version` (odd while being written); the state and
  // the times are then updated in place by the operation's own thread.
  struct Slot {
    std::atomic<uint64_t> version{0};
    std::atomic<uint64_t> id{0};
    std::atomic<int64_t> seq{0};
    std::atomic<const char*> name{nullptr};
    std::atomic<uint64_t> count{0};
    std::atomic<int32_t> datatype{-1}, redop{-1}, root{-1};
    std::atomic<bool> p2p{false};
    std::atomic<uint8_t> state{0};
    std::atomic<bool> ran{false};
    std::atomic<int64_t> queued{0}, ended{0};  // ended: failures only
  };
  // nullptr once the slot holds a newer operation
  Slot* slotOf(uint64_t id) const {
    if (id == 0) return nullptr;
    Slot& s = slots_[id & mask_];
    return s.id.load(std::memory_order_relaxed) == id ? &s : nullptr;
  }
  void failed(Slot& s);  // finished(id, false)

  Identity who_;
  size_t mask_;
  std::unique_ptr<Slot[]> slots_;
  // Writers (the thread that runs the engine's quick paths, API threads recording the operations
  // they build) hold this lock for the counters and the slot they fill: one locked exchange per
  // record, or per group of records, where an atomic increment of each counter cost one (three
  // for a Send/Recv pair), each draining the store buffer.
  std::atomic<uint32_t> writers_{0};
  void lockWriters() {
    if (writers_.exchange(1, std::memory_order_acquire) != 0) [[unlikely]] lockWritersSlow();
  }
  void lockWritersSlow();
  void unlockWriters() { writers_.store(0, std::memory_order_release); }
  uint64_t write(const Call& c, int64_t queuedNs);  // under the writers' lock

  std::atomic<uint64_t> next_{1};  // written under the writers' lock; read by snapshot()
  int64_t collSeq_ = 0;            // under the writers' lock
  std::unique_ptr<int64_t[]> p2pSeq_;  // [2 * peer + (recv ? 1 : 0)], under the writers' lock
  mutable std::mutex textMu_;                      // the waits' texts and the failure
  std::vector<uint64_t> textIds_;  // the operation each slot's text belongs to
  std::vector<std::vector<int>> waitingFor_;
  std::vector<std::string> detail_;
  std::string failure_;
};

}  // namespace conflux::flight
