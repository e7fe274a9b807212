#include "context.h"

#include <algorithm>
#include <cstring>

#include "common/env.h"
#include "common/log.h"
#include "ops/call_tag.h"
#include "reduce/kernels.h"

namespace conflux {

WaitSettings WaitSettings::fromEnv(int timeoutMsOverride, bool ownCpus) {
  WaitSettings w;
  if (env::getString("CFX_SPIN") == "auto") {
    // Spinning only pays when every rank has a core; otherwise a waiting rank must give its core
    // to the rank it waits for.
    w.spin = ownCpus ? 2000 : 0;
  } else {
    w.spin = static_cast<int>(std::max<int64_t>(0, env::getInt("CFX_SPIN")));
  }
  if (env::getString("CFX_YIELDS") == "auto") {
    // With more ranks than cores, the rank a wait needs is usually runnable on this core: yielding
    // hands the core over at once, where a sleep costs a futex wake-up and a reschedule on each
    // side (an 8 B torch all_reduce at 4 ranks on 2 cores: 47 us with 8 yields, 23-28 us with 1000).
    w.yields = ownCpus ? 8 : 1000;
  } else {
    w.yields = static_cast<int>(std::max<int64_t>(0, env::getInt("CFX_YIELDS")));
  }
  const int64_t runAhead = env::getInt("CFX_RUNAHEAD");
  if (runAhead < 1 || runAhead > kMaxRunAhead) {
    throw Error(Status::kInvalidArgument, "CFX_RUNAHEAD must be from 1 to " + std::to_string(kMaxRunAhead) + ", not " +
                                              std::to_string(runAhead));
  }
  w.runAhead = static_cast<int>(runAhead);
  double seconds = env::getDouble("CFX_TIMEOUT");
  if (seconds <= 0) throw Error(Status::kInvalidArgument, "CFX_TIMEOUT must be positive");
  w.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  if (timeoutMsOverride > 0) w.timeout = std::chrono::milliseconds(timeoutMsOverride);
  w.livenessPeriod = std::chrono::milliseconds(std::max<int64_t>(10, env::getInt("CFX_LIVENESS_MS")));
  w.networkGrace = std::min(w.timeout, std::chrono::milliseconds(2000));
  return w;
}

Context::Context(shm::Segment segment, int rank, std::vector<pid_t> pids, WaitSettings wait)
    : segment_(std::move(segment)),
      layout_(Layout::fromHeader(header())),
      controls_(reinterpret_cast<RankControl*>(segment_.data() + layout_.controlOffset())),
      rank_(rank),
      size_(static_cast<int>(pids.size())),
      pids_(std::move(pids)),
      wait_(wait),
      registered_(controls_, rank_, pids_),
      health_(header(), controls_, rank_, pids_, commRanks_, wait_) {
  if (static_cast<int>(layout_.nranks) != size_) throw Error(Status::kInternalError, "segment rank count mismatch");
  // Every call takes the next of each rank's kMailboxSlots mailboxes, so for its first 64 calls a
  // communicator met a page never touched by this process every few calls, and every rank waited
  // out that page fault (about 30 us on the Intel Xeon VM: 2-rank AllGathers of 64 KiB, 5 us each,
  // took 30 us every four to six calls until the 60th). The staging slots and this rank's
  // channels did the same on each path's first calls (4-rank AlltoAllv of 256 KiB, 5 calls after
  // a warm-up on single copies: 193-928 us, 87-193 once mapped). Mapping all of them costs 1.5-5
  // ms at 2-4 ranks and about 8.5 ms at 8 on the 2-CPU VM, once (perf/RESULTS.md, 2026-11-29
  // (seventh) and (eighth)).
  for (const Layout::Range& r : layout_.mappedAtInit(rank_)) segment_.prefault(r.offset, r.bytes);
  channels_.reserve(static_cast<size_t>(size_) * size_);
  for (int s = 0; s < size_; ++s) {
    for (int d = 0; d < size_; ++d) {
      channels_.emplace_back(segment_.data() + layout_.channelOffset(s, d), layout_.p2pSlots, layout_.p2pSlotBytes);
    }
  }
  if (layout_.domains >= 2) {
    domainRanks_.resize(layout_.domains);
    for (int r = 0; r < size_; ++r) {
      int d = control(r).domain;
      if (d < 0 || d >= static_cast<int>(layout_.domains)) {
        throw Error(Status::kInternalError, "shared-memory segment: rank " + std::to_string(r) + " has domain " +
                                                std::to_string(d) + " of " + std::to_string(layout_.domains));
      }
      domainOf_.push_back(d);
      domainRanks_[d].push_back(r);
    }
    for (const auto& ranks : domainRanks_) {
      if (ranks.empty()) throw Error(Status::kInternalError, "shared-memory segment: a NUMA domain has no rank");
    }
  }
}

std::byte* Context::domainHalf(int d, uint64_t chunk) const {
  return segment_.data() + layout_.domainsOffset() + static_cast<size_t>(d) * layout_.slotBytes +
         (chunk & 1) * halfBytes();
}

std::byte* Context::slotHalf(int r, uint64_t chunk) const {
  return segment_.data() + layout_.slotsOffset() + static_cast<size_t>(r) * layout_.slotBytes +
         (chunk & 1) * halfBytes();
}

std::byte* Context::scratchHalf(uint64_t chunk) const {
  return segment_.data() + layout_.scratchOffset() + (chunk & 1) * halfBytes();
}

uint64_t Context::reserveChunks(uint64_t n) {
  uint64_t first = chunkSeq_;
  chunkSeq_ += n;
  return first;
}

uint64_t Context::arrive() {
  ++barrierSeq_;
  control(rank_).arrived.store(barrierSeq_, std::memory_order_release);
  ringAll();
  return barrierSeq_;
}

bool Context::allArrived(uint64_t barrier) const {
  for (int r = 0; r < size_; ++r) {
    if (control(r).arrived.load(std::memory_order_acquire) < barrier) return false;
  }
  return true;
}

std::vector<int> Context::notArrived(uint64_t barrier) const {
  std::vector<int> out;
  for (int r = 0; r < size_; ++r) {
    if (control(r).arrived.load(std::memory_order_acquire) < barrier) out.push_back(r);
  }
  return out;
}

void Context::publish(const OpDescriptor& d) { control(rank_).desc[d.seq & 1] = d; }

namespace {
std::string describe(const OpDescriptor& d) {
  std::string s = describeCall(d);
  s.insert(std::string(collectiveName(d.coll)).size(), " #" + std::to_string(d.seq));
  if (d.outer != 0) s += " (a step of " + describeCallTag(net::CallTag{d.outer, d.outerSeq}) + ")";
  return s;
}
}  // namespace

void throwMismatch(int myRank, const OpDescriptor& mine, int otherRank, const OpDescriptor& theirs) {
  OpDescriptor sameFlags = theirs;
  sameFlags.flags = mine.flags;
  // The same call on paths chosen apart: the ranks' environments differ.
  const std::string why = mine.flags != theirs.flags && sameFlags == mine
                              ? " (the same call with different path settings: CFX_REGISTERED, CFX_CMA and their "
                                "*_MIN_BYTES must be the same on every rank)"
                              : "";
  throw Error(Status::kInvalidUsage, "collective mismatch: rank " + std::to_string(myRank) + " called " +
                                         describe(mine) + " but rank " + std::to_string(otherRank) + " called " +
                                         describe(theirs) + why);
}

void Context::checkDescriptors(const OpDescriptor& mine) const {
  for (int r = 0; r < size_; ++r) {
    const OpDescriptor& other = control(r).desc[mine.seq & 1];
    if (!(other == mine)) throwMismatch(commRank(rank_), mine, commRank(r), other);
  }
}

void Context::finishOp(uint64_t seq) {
  control(rank_).finished.store(seq, std::memory_order_release);
  ringOwed_ = true;
}

bool Context::readFinished(uint64_t seq, std::vector<int>* lagging) const {
  bool all = true;
  uint64_t lowest = UINT64_MAX;
  for (int r = 0; r < size_ && (all || lagging); ++r) {
    const uint64_t f = control(r).finished.load(std::memory_order_acquire);
    lowest = std::min(lowest, f);
    if (f >= seq) continue;
    all = false;
    if (lagging) lagging->push_back(r);
  }
  if (all && lowest > finishedByAll_.load(std::memory_order_relaxed)) {
    finishedByAll_.store(lowest, std::memory_order_relaxed);  // one thread runs this context's work
  }
  return all;
}

bool Context::somePeerFinished(uint64_t seq) const {
  if (seq <= finishedByAll_.load(std::memory_order_relaxed) || seq <= finishedBySomePeer_.load(std::memory_order_relaxed)) {
    return true;
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const uint64_t f = control(r).finished.load(std::memory_order_acquire);
    if (f >= seq) {
      finishedBySomePeer_.store(f, std::memory_order_relaxed);  // one thread runs this context's work
      return true;
    }
  }
  return false;
}

std::byte* Context::privateScratch(size_t bytes) {
  if (bytes > privateBytes_) {
    private_ = std::make_unique_for_overwrite<std::byte[]>(bytes + 64);
    privateBytes_ = bytes;
  }
  return reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(private_.get()) + 63) & ~uintptr_t{63});
}

void Context::ring(int peer) { control(peer).bell.ring(); }

void Context::ringAll() {
  ringOwed_ = false;
  // One fence for all peers (ring() pays one each).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  ringArmed();
}

void Context::ringArmedAfterLocked() const {
#if defined(__x86_64__) || defined(__i386__)
  // A locked instruction since the publication drained the store buffer, as ringAll's fence would:
  // only the compiler must keep the doorbells' loads after it.
  std::atomic_signal_fence(std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
  ringArmed();
}

void Context::ringArmed() const {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && control(r).bell.armed.load(std::memory_order_seq_cst) != 0) control(r).bell.ringAlways();
  }
}

shm::Doorbell& Context::myBell() const { return control(rank_).bell; }

}  // namespace conflux
