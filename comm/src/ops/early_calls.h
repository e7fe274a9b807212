// The latency-path calls that returned before every rank's call was compared with theirs
// (MailboxOp, ready early), oldest first, until each is confirmed: only their sequence numbers.
// A call's descriptor stays in this rank's mailbox of that number until the call is finished (no
// rank writes a mailbox before every rank finished what it last held), so the number is all its
// confirmation needs: no copy of the call is kept (2-rank Broadcast of 8 B: the heap copy and the
// list of them took about 150 of the root's 1,146 instructions per call; perf/RESULTS.md,
// 2026-12-03).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "context.h"
#include "ops/op.h"

namespace conflux {

// One call's confirmation: every rank's call of number `seq` compared with this rank's, then the
// call finished, in order. An Op, so that waits report it as they report any other.
class ConfirmingCall final : public Op {
 public:
  ConfirmingCall() = default;
  explicit ConfirmingCall(uint64_t seq) : seq_(seq) {}

  bool progress(Context& ctx) override;
  bool done() const override { return done_; }
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;

 private:
  uint64_t seq_ = 0;
  int confirmed_ = 0;  // the ranks below this one made the same call
  bool done_ = false;
};

class EarlyCalls {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return static_cast<size_t>(tail_ - head_); }
  // Call `seq` returned early (after every call in the list). Throws kInternalError when
  // WaitSettings::kMaxRunAhead are already there (the executor lets no more return early).
  void push(uint64_t seq);
  // Confirms the calls oldest first, as far as the peers allow, and drops each one finished.
  // Returns whether anything moved. Throws the mismatch of a rank that made a different call.
  bool confirm(Context& ctx);
  void clear() { head_ = tail_ = 0; }
  // `f(const Op&)` on each call still awaiting its confirmation, oldest first.
  template <class F>
  void forEach(F&& f) const {
    for (uint64_t i = head_; i < tail_; ++i) f(static_cast<const Op&>(ring_[i % kCapacity]));
  }

 private:
  static constexpr size_t kCapacity = 128;
  static_assert(kCapacity >= static_cast<size_t>(WaitSettings::kMaxRunAhead));
  std::array<ConfirmingCall, kCapacity> ring_;
  uint64_t head_ = 0;  // the oldest call's place
  uint64_t tail_ = 0;  // the next call's place
};

}  // namespace conflux
