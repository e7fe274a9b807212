#include "flight/recorder.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

namespace conflux::flight {

const char* stateName(State s) {
  switch (s) {
    case State::kQueued: return "queued";
    case State::kRunning: return "running";
    case State::kWaiting: return "waiting";
    case State::kDone: return "done";
    case State::kFailed: return "failed";
  }
  return "?";
}

// The text of a wait belongs to operation `id`; a newer operation in the same slot ignores it.
struct WaitText {
  uint64_t id = 0;
  std::vector<int> ranks;
  std::string detail;
};

int64_t Recorder::now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Recorder::Recorder(Identity who, size_t capacity) : who_(std::move(who)) {
  size_t cap = 8;
  while (cap < capacity) cap *= 2;
  mask_ = cap - 1;
  slots_ = std::make_unique<Slot[]>(cap);
  p2pSeq_ = std::make_unique<int64_t[]>(2 * static_cast<size_t>(std::max(who_.nranks, 1)));  // zeroed
  waitingFor_.resize(cap);
  detail_.resize(cap);
  textIds_.assign(cap, 0);
}

Recorder::~Recorder() = default;

void Recorder::lockWritersSlow() {
  // The holder only fills a slot; it may have lost its CPU, so the wait yields after a few polls.
  for (int polls = 0; writers_.exchange(1, std::memory_order_acquire) != 0; ++polls) {
    while (writers_.load(std::memory_order_relaxed) != 0) {
      if (++polls > 64) sched_yield();
    }
  }
}

uint64_t Recorder::write(const Call& c, int64_t queuedNs) {
  const uint64_t id = next_.load(std::memory_order_relaxed);
  next_.store(id + 1, std::memory_order_relaxed);
  int64_t& counter = c.p2p && c.root >= 0 && c.root < who_.nranks
                         ? p2pSeq_[2 * static_cast<size_t>(c.root) + (c.isRecv ? 1 : 0)]
                         : collSeq_;
  const int64_t seq = ++counter;
  Slot& s = slots_[id & mask_];
  const uint64_t v = s.version.load(std::memory_order_relaxed);
  s.version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.id.store(id, std::memory_order_relaxed);
  s.seq.store(seq, std::memory_order_relaxed);
  s.name.store(c.name, std::memory_order_relaxed);
  s.count.store(c.count, std::memory_order_relaxed);
  s.datatype.store(c.datatype, std::memory_order_relaxed);
  s.redop.store(c.redop, std::memory_order_relaxed);
  s.root.store(c.root, std::memory_order_relaxed);
  s.p2p.store(c.p2p, std::memory_order_relaxed);
  s.state.store(static_cast<uint8_t>(State::kQueued), std::memory_order_relaxed);
  s.queued.store(queuedNs, std::memory_order_relaxed);
  s.ran.store(false, std::memory_order_relaxed);
  s.ended.store(0, std::memory_order_relaxed);
  s.version.store(v + 2, std::memory_order_release);
  return id;
}

void Recorder::started(uint64_t id) {
  // Only the engine's running thread moves an operation on from queued, so no read-modify-write.
  Slot* s = slotOf(id);
  if (s == nullptr || s->state.load(std::memory_order_relaxed) != static_cast<uint8_t>(State::kQueued)) return;
  s->ran.store(true, std::memory_order_relaxed);
  s->state.store(static_cast<uint8_t>(State::kRunning), std::memory_order_relaxed);
}

void Recorder::waiting(uint64_t id, const std::vector<int>& ranks, std::string detail) {
  Slot* s = slotOf(id);
  if (s == nullptr) return;
  uint8_t st = s->state.load(std::memory_order_relaxed);
  if (st == static_cast<uint8_t>(State::kRunning)) s->state.store(static_cast<uint8_t>(State::kWaiting), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(textMu_);
  textIds_[id & mask_] = id;
  waitingFor_[id & mask_] = ranks;
  detail_[id & mask_] = std::move(detail);
}

void Recorder::failed(Slot& s) {
  if (s.state.load(std::memory_order_relaxed) == static_cast<uint8_t>(State::kFailed)) return;
  s.ended.store(now(), std::memory_order_relaxed);
  s.state.store(static_cast<uint8_t>(State::kFailed), std::memory_order_relaxed);
}

void Recorder::failAll(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(textMu_);
    if (failure_.empty()) failure_ = reason;
  }
  const int64_t t = now();
  for (size_t i = 0; i <= mask_; ++i) {
    Slot& s = slots_[i];
    if (s.id.load(std::memory_order_relaxed) == 0) continue;
    uint8_t st = s.state.load(std::memory_order_relaxed);
    if (st == static_cast<uint8_t>(State::kDone) || st == static_cast<uint8_t>(State::kFailed)) continue;
    s.ended.store(t, std::memory_order_relaxed);
    s.state.store(static_cast<uint8_t>(State::kFailed), std::memory_order_relaxed);
  }
}

std::string Recorder::failure() const {
  std::lock_guard<std::mutex> lock(textMu_);
  return failure_;
}

std::vector<Record> Recorder::snapshot() const {
  const uint64_t end = next_.load(std::memory_order_acquire);
  const uint64_t cap = mask_ + 1;
  const uint64_t begin = end > cap ? end - cap : 1;
  std::vector<Record> out;
  for (uint64_t id = begin; id < end; ++id) {
    const Slot& s = slots_[id & mask_];
    for (int attempt = 0; attempt < 100; ++attempt) {
      uint64_t v1 = s.version.load(std::memory_order_acquire);
      if (v1 & 1) continue;
      Record r;
      r.id = s.id.load(std::memory_order_relaxed);
      r.seq = s.seq.load(std::memory_order_relaxed);
      r.call.name = s.name.load(std::memory_order_relaxed);
      r.call.count = s.count.load(std::memory_order_relaxed);
      r.call.datatype = s.datatype.load(std::memory_order_relaxed);
      r.call.redop = s.redop.load(std::memory_order_relaxed);
      r.call.root = s.root.load(std::memory_order_relaxed);
      r.call.p2p = s.p2p.load(std::memory_order_relaxed);
      r.state = static_cast<State>(s.state.load(std::memory_order_relaxed));
      r.queuedNs = s.queued.load(std::memory_order_relaxed);
      r.ran = s.ran.load(std::memory_order_relaxed);
      r.endedNs = s.ended.load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.version.load(std::memory_order_relaxed) != v1) continue;
      if (r.id == id && r.call.name != nullptr) out.push_back(std::move(r));
      break;
    }
  }
  std::lock_guard<std::mutex> lock(textMu_);
  for (Record& r : out) {
    size_t i = r.id & mask_;
    if (textIds_[i] != r.id) continue;
    r.waitingFor = waitingFor_[i];
    r.detail = detail_[i];
  }
  return out;
}

}  // namespace conflux::flight
