// The health of one communicator's local work, as every rank's waits see it: this rank's abort,
// the poison a failing rank leaves in shared memory for all the others, peers that exited, and a
// timed-out wait's report of the rank that stalled (stall.h). A part of Context, which holds one
// and hands it out (Context::health); the executor's waits call it when their work stops moving.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "shm_layout.h"

namespace conflux {

struct WaitSettings;

class Health {
 public:
  // `header` and `controls`: the segment's header and every local rank's control block (shared
  // memory); `pids`, `commRanks` (empty: the same as local ranks) and `wait`: the context's. All
  // outlive this object (the context holds them all).
  Health(SegmentHeader& header, RankControl* controls, int rank, const std::vector<pid_t>& pids,
         const std::vector<int>& commRanks, const WaitSettings& wait)
      : header_(header), controls_(controls), rank_(rank), pids_(pids), commRanks_(commRanks), wait_(wait) {}
  Health(const Health&) = delete;
  Health& operator=(const Health&) = delete;

  // Each throws Error when it fails:
  //  - the communicator was aborted here, or another rank's failure reaches this rank's work;
  //  - nothing moved for longer than the timeout (`what` describes what we wait for).
  // A failure reaches the collective this rank is in (or starts next) when it concerns that
  // operation number or an earlier one: a rank still finishing an earlier collective that every
  // rank got past completes it first, then fails its next. It always reaches point-to-point work
  // (`pointToPoint`), which is not numbered.
  void checkAbortAndPoison(const std::function<std::string()>& what, bool pointToPoint = true);
  bool poisonReaches(bool pointToPoint) const;
  bool poisoned() const { return header_.poisonedBy.load(std::memory_order_acquire) > 0; }
  // The poison's status and message, when it reaches this rank's next operation (else kSuccess).
  Status poisonStatus(std::string* message) const;
  // `waited`: the local ranks the wait is blocked on; `across`: the first communicator rank on
  // another host it waits for (-1: none). The message names the rank that stalled.
  void checkTimeout(std::chrono::steady_clock::time_point lastProgress, const std::function<std::string()>& what,
                    const std::vector<int>& waited, int across);
  // While a wait sleeps: the local rank it waits for first, and the communicator rank on another
  // host it waits for first (-1: none, or the wait ended).
  void publishWaitingFor(int local, int across) {
    controls_[rank_].waitingFor.store(local + 1, std::memory_order_relaxed);
    controls_[rank_].waitingAcross.store(across + 1, std::memory_order_relaxed);
  }
  // The first of `ranks` whose process has exited, or -1 (checked at most every livenessPeriod).
  // A peer that finished its part and exited is no failure, so the caller progresses once more
  // and calls failDeadPeer only if it is still blocked on that rank.
  int findDeadPeer(const std::vector<int>& ranks);
  [[noreturn]] void failDeadPeer(int rank, const std::function<std::string()>& what);
  // Marks the communicator failed in shared memory so every peer stops waiting at once; the failure
  // concerns this rank's first unfinished operation and later ones (`fromSeq` overrides: 0, all).
  void poison(Status status, const std::string& message, std::optional<uint64_t> fromSeq = std::nullopt);
  // Poisons the communicator with `message` and throws it.
  [[noreturn]] void fail(Status status, const std::string& message);
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

 private:
  // The rank that stalled, in words ("" when the wait names no peer), and whether that is this
  // host's last word: false when the stall lies across the network and no local rank is stopped
  // or gone, so a notice from the other host may say more.
  struct StallReport {
    std::string text;
    bool conclusive = true;
    // The chain ends at a rank that runs but is not waiting: it may have just failed itself, its
    // failure not yet published (checkTimeout gives that kNotWaitingGrace).
    bool notWaiting = false;
  };
  static constexpr std::chrono::milliseconds kNotWaitingGrace{250};
  StallReport stallReport(const std::vector<int>& waited, int across) const;
  // A local rank other than this one whose process is stopped or gone (-1: none), and how.
  int suspectLocalRank(std::string& how) const;
  int waitingForOf(int r) const { return controls_[r].waitingFor.load(std::memory_order_relaxed) - 1; }
  int size() const { return static_cast<int>(pids_.size()); }
  int commRank(int r) const { return commRanks_.empty() ? r : commRanks_[r]; }
  // The first operation this rank has not finished (the one it is in, or starts next).
  uint64_t firstUnfinished() const { return controls_[rank_].finished.load(std::memory_order_relaxed) + 1; }

  SegmentHeader& header_;
  RankControl* controls_;
  int rank_;
  const std::vector<pid_t>& pids_;
  const std::vector<int>& commRanks_;
  const WaitSettings& wait_;
  std::atomic<bool> aborted_{false};
  std::chrono::steady_clock::time_point lastLivenessCheck_{};
};

}  // namespace conflux
