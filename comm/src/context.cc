#include "context.h"

#include <algorithm>
#include <cstring>

#include "common/env.h"
#include "common/log.h"
#include "ops/call_tag.h"
#include "reduce/kernels.h"
#include "stall.h"
#include "transport/shm/liveness.h"

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
      registered_(controls_, rank_, pids_) {
  if (static_cast<int>(layout_.nranks) != size_) throw Error(Status::kInternalError, "segment rank count mismatch");
  channels_.reserve(static_cast<size_t>(size_) * size_);
  for (int s = 0; s < size_; ++s) {
    for (int d = 0; d < size_; ++d) {
      std::byte* base = segment_.data() + layout_.channelsOffset() +
                        (static_cast<size_t>(s) * size_ + d) * layout_.channelStride();
      channels_.emplace_back(base, layout_.p2pSlots, layout_.p2pSlotBytes);
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
  throw Error(Status::kInvalidUsage, "collective mismatch: rank " + std::to_string(myRank) + " called " +
                                         describe(mine) + " but rank " + std::to_string(otherRank) + " called " +
                                         describe(theirs));
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

bool Context::allFinished(uint64_t seq, std::vector<int>* lagging) const {
  if (lagging == nullptr && seq <= finishedByAll_.load(std::memory_order_relaxed)) return true;
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
  if (seq <= finishedByAll_.load(std::memory_order_relaxed)) return true;
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && control(r).finished.load(std::memory_order_acquire) >= seq) return true;
  }
  return false;
}

void Context::ring(int peer) { control(peer).bell.ring(); }

void Context::ringAll() {
  ringOwed_ = false;
  // One fence for all peers (ring() pays one each).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && control(r).bell.armed.load(std::memory_order_seq_cst) != 0) control(r).bell.ringAlways();
  }
}

shm::Doorbell& Context::myBell() const { return control(rank_).bell; }

void Context::poison(Status status, const std::string& message, std::optional<uint64_t> fromSeq) {
  SegmentHeader& h = header();
  const uint64_t seq = fromSeq.value_or(firstUnfinished());
  // The failure concerns the lowest operation any failing rank had not finished: lower it first, so a
  // rank that sees the poison also sees a number no higher than this one.
  uint64_t cur = h.poisonSeq.load(std::memory_order_relaxed);
  while (seq < cur && !h.poisonSeq.compare_exchange_weak(cur, seq, std::memory_order_acq_rel)) {
  }
  int32_t expected = 0;
  // Claim the poison slot first (value -1 while writing), then publish who failed.
  if (h.poisonedBy.compare_exchange_strong(expected, -1)) {
    h.poisonStatus = static_cast<int32_t>(status);
    std::snprintf(h.poisonMessage, sizeof(h.poisonMessage), "%s", message.c_str());
    h.poisonedBy.store(rank_ + 1, std::memory_order_release);
  }
  for (int r = 0; r < size_; ++r) control(r).bell.ringAlways();
}

bool Context::poisonReaches(bool pointToPoint) const {
  const SegmentHeader& h = header();
  if (h.poisonedBy.load(std::memory_order_acquire) <= 0) return false;
  return pointToPoint || h.poisonSeq.load(std::memory_order_acquire) <= firstUnfinished();
}

Status Context::poisonStatus(std::string* message) const {
  if (!poisonReaches(false)) return Status::kSuccess;
  if (message) *message = header().poisonMessage;
  return static_cast<Status>(header().poisonStatus);
}

void Context::abort() {
  aborted_.store(true, std::memory_order_release);
  // Peers on this host stop at once too (remote hosts learn it from the transport's shutdown).
  poison(Status::kAborted, "rank " + std::to_string(commRank(rank_)) + " aborted the communicator", 0);
  myBell().ringAlways();
}

void Context::checkAbortAndPoison(const std::function<std::string()>& what, bool pointToPoint) {
  if (aborted()) {
    poison(Status::kAborted, "rank " + std::to_string(commRank(rank_)) + " aborted the communicator", 0);
    throw Error(Status::kAborted, "communicator aborted while waiting for " + what());
  }
  int32_t by = header().poisonedBy.load(std::memory_order_acquire);
  if (by > 0 && poisonReaches(pointToPoint)) {
    // Mismatched calls are every rank's usage error, and a stall every waiting rank's timeout,
    // whichever rank found them; a timeout's message already names the rank that stalled.
    const int32_t status = header().poisonStatus;
    if (status == static_cast<int32_t>(Status::kTimeout)) {
      throw Error(Status::kTimeout, std::string(header().poisonMessage) + " (CFX_TIMEOUT); this rank (rank " +
                                        std::to_string(commRank(rank_)) + ") waited for " + what());
    }
    const Status s = status == static_cast<int32_t>(Status::kInvalidUsage) ? Status::kInvalidUsage : Status::kRemoteError;
    throw Error(s, "rank " + std::to_string(commRank(by - 1)) + " failed (" + std::string(header().poisonMessage) +
                       ") while this rank waited for " + what());
  }
}

int Context::findDeadPeer(const std::vector<int>& ranks) {
  auto now = std::chrono::steady_clock::now();
  if (now - lastLivenessCheck_ < wait_.livenessPeriod) return -1;
  lastLivenessCheck_ = now;
  for (int r : ranks) {
    if (r != rank_ && !shm::processAlive(pids_[r])) return r;
  }
  return -1;
}

void Context::failDeadPeer(int r, const std::function<std::string()>& what) {
  std::string msg = "rank " + std::to_string(commRank(r)) + " (pid " + std::to_string(pids_[r]) + ") exited";
  poison(Status::kRemoteError, msg);
  throw Error(Status::kRemoteError, msg + " while this rank waited for " + what());
}

namespace {

// How a process stands, in words, when that explains a stall: stopped or gone ("" otherwise: it
// runs or sleeps, and may be busy outside Conflux).
std::string stoppedOrGone(pid_t pid) {
  switch (shm::processState(pid)) {
    case 'T':
    case 't': return "it is stopped (SIGSTOP, or a debugger holds it)";
    case 0:
    case 'Z':
    case 'X': return "it has exited";
    default: return "";
  }
}

}  // namespace

int Context::suspectLocalRank(std::string& how) const {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    how = stoppedOrGone(pids_[r]);
    if (!how.empty()) return r;
  }
  return -1;
}

Context::StallReport Context::stallReport(const std::vector<int>& waited, int across) const {
  StallFinding f = findStall(
      rank_, waited, across,
      [this](int r) {
        return WaitTarget{control(r).waitingFor.load(std::memory_order_relaxed) - 1,
                          control(r).waitingAcross.load(std::memory_order_relaxed) - 1};
      },
      size_);
  auto name = [this](int r) { return "rank " + std::to_string(commRank(r)); };
  auto pidText = [this](int r) { return " (pid " + std::to_string(pids_[r]) + ")"; };
  std::string chain;  // "rank A waits for rank B, which waits for rank C"
  if (!f.chain.empty()) {
    chain = name(rank_) + " waits for " + name(f.chain[0]);
    for (size_t i = 1; i < f.chain.size(); ++i) chain += ", which waits for " + name(f.chain[i]);
  }
  if (f.cycle) {
    return {"ranks wait for each other: " + chain + ", which waits for " + name(waitingForOf(f.chain.back())) +
                " (calls that cannot all complete: Send/Recv in a crossing order, or different operations)",
            true};
  }
  if (f.across >= 0) {
    // The stall lies on another host, or on the link to it; unless a rank here is stopped or gone.
    std::string waitsAcross = (chain.empty() ? name(rank_) + " waits for" : chain + ", which waits for") + " rank " +
                              std::to_string(f.across) + " on another host";
    std::string how;
    if (int s = suspectLocalRank(how); s >= 0) return {name(s) + pidText(s) + " stalled: " + how + "; " + waitsAcross, true};
    return {waitsAcross, false};
  }
  if (f.chain.empty()) return {"", true};
  const int s = f.stalled();
  std::string how = stoppedOrGone(pids_[s]);
  const bool notWaiting = how.empty();
  if (notWaiting) how = "it is not waiting in Conflux (busy elsewhere, or it has not made the call)";
  std::string text = name(s) + pidText(s) + " stalled: " + how;
  if (f.chain.size() > 1) text += "; " + chain;
  return {text, true, notWaiting};
}

void Context::fail(Status status, const std::string& message) {
  poison(status, message);
  throw Error(status, message);
}

int Context::waitingForOf(int r) const { return control(r).waitingFor.load(std::memory_order_relaxed) - 1; }

void Context::checkTimeout(std::chrono::steady_clock::time_point lastProgress,
                           const std::function<std::string()>& what, const std::vector<int>& waited, int across) {
  const auto waitedFor = std::chrono::steady_clock::now() - lastProgress;
  if (waitedFor <= wait_.timeout) return;
  const StallReport stall = stallReport(waited, across);
  if (!stall.conclusive && waitedFor <= wait_.timeout + wait_.networkGrace) return;
  // A peer that timed out a moment earlier has left its wait before this rank sees its failure:
  // naming it "not waiting" then hid the rank the chain led to (StoppedInRingTest under TSan, 2 runs
  // in 8). A little longer lets its failure arrive and be relayed (the wait loop checks it first).
  if (stall.notWaiting && waitedFor <= wait_.timeout + kNotWaitingGrace) return;
  auto seconds = [](std::chrono::milliseconds d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", std::chrono::duration<double>(d).count());
    return std::string(buf);
  };
  std::string msg = (stall.text.empty() ? "rank " : stall.text + ". Rank ") + std::to_string(commRank(rank_)) +
                    " timed out after " + seconds(wait_.timeout) + " s without progress" +
                    (stall.conclusive ? "" : " (and " + seconds(wait_.networkGrace) + " s more for word from that host)") +
                    " waiting for " + what();
  poison(Status::kTimeout, msg);
  throw Error(Status::kTimeout, msg + " (CFX_TIMEOUT)");
}

}  // namespace conflux
