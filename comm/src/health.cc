#include "health.h"

#include <cstdio>

#include "context.h"
#include "stall.h"
#include "transport/shm/liveness.h"

namespace conflux {

void Health::poison(Status status, const std::string& message, std::optional<uint64_t> fromSeq) {
  SegmentHeader& h = header_;
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
  for (int r = 0; r < size(); ++r) controls_[r].bell.ringAlways();
}

bool Health::poisonReaches(bool pointToPoint) const {
  const SegmentHeader& h = header_;
  if (h.poisonedBy.load(std::memory_order_acquire) <= 0) return false;
  return pointToPoint || h.poisonSeq.load(std::memory_order_acquire) <= firstUnfinished();
}

Status Health::poisonStatus(std::string* message) const {
  if (!poisonReaches(false)) return Status::kSuccess;
  if (message) *message = header_.poisonMessage;
  return static_cast<Status>(header_.poisonStatus);
}

void Health::abort() {
  aborted_.store(true, std::memory_order_release);
  // Peers on this host stop at once too (remote hosts learn it from the transport's shutdown).
  poison(Status::kAborted, "rank " + std::to_string(commRank(rank_)) + " aborted the communicator", 0);
  controls_[rank_].bell.ringAlways();
}

void Health::checkAbortAndPoison(const std::function<std::string()>& what, bool pointToPoint) {
  if (aborted()) {
    poison(Status::kAborted, "rank " + std::to_string(commRank(rank_)) + " aborted the communicator", 0);
    throw Error(Status::kAborted, "communicator aborted while waiting for " + what());
  }
  int32_t by = header_.poisonedBy.load(std::memory_order_acquire);
  if (by > 0 && poisonReaches(pointToPoint)) {
    // Mismatched calls are every rank's usage error, and a stall every waiting rank's timeout,
    // whichever rank found them; a timeout's message already names the rank that stalled.
    const int32_t status = header_.poisonStatus;
    if (status == static_cast<int32_t>(Status::kTimeout)) {
      throw Error(Status::kTimeout, std::string(header_.poisonMessage) + " (CFX_TIMEOUT); this rank (rank " +
                                        std::to_string(commRank(rank_)) + ") waited for " + what());
    }
    const Status s = status == static_cast<int32_t>(Status::kInvalidUsage) ? Status::kInvalidUsage : Status::kRemoteError;
    throw Error(s, "rank " + std::to_string(commRank(by - 1)) + " failed (" + std::string(header_.poisonMessage) +
                       ") while this rank waited for " + what());
  }
}

int Health::findDeadPeer(const std::vector<int>& ranks) {
  auto now = std::chrono::steady_clock::now();
  if (now - lastLivenessCheck_ < wait_.livenessPeriod) return -1;
  lastLivenessCheck_ = now;
  for (int r : ranks) {
    if (r != rank_ && !shm::processAlive(pids_[r])) return r;
  }
  return -1;
}

void Health::failDeadPeer(int r, const std::function<std::string()>& what) {
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

int Health::suspectLocalRank(std::string& how) const {
  for (int r = 0; r < size(); ++r) {
    if (r == rank_) continue;
    how = stoppedOrGone(pids_[r]);
    if (!how.empty()) return r;
  }
  return -1;
}

Health::StallReport Health::stallReport(const std::vector<int>& waited, int across) const {
  StallFinding f = findStall(
      rank_, waited, across,
      [this](int r) {
        return WaitTarget{controls_[r].waitingFor.load(std::memory_order_relaxed) - 1,
                          controls_[r].waitingAcross.load(std::memory_order_relaxed) - 1};
      },
      size());
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

void Health::fail(Status status, const std::string& message) {
  poison(status, message);
  throw Error(status, message);
}

void Health::checkTimeout(std::chrono::steady_clock::time_point lastProgress,
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
