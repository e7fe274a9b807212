#include "ops/early_calls.h"

#include "common/error.h"
#include "ops/mailbox_op.h"

namespace conflux {

bool ConfirmingCall::progress(Context& ctx) {
  if (done_) return false;
  const int n = ctx.size();
  // A rank finishes an operation only after comparing every rank's call with its own, so all the
  // calls are the same: one look at a peer's `finished` line confirms this and every earlier
  // operation, where reading the peers' mailboxes would take a miss per operation.
  if (confirmed_ < n && ctx.somePeerFinished(seq_)) confirmed_ = n;
  if (confirmed_ < n) {
    const OpDescriptor& mine = ctx.mailbox(ctx.rank(), seq_).call;
    for (; confirmed_ < n; ++confirmed_) {
      if (!peerMadeCall(ctx, seq_, mine, confirmed_)) return false;
    }
  }
  if (ctx.finishedByMe() + 1 != seq_) return false;  // finished in order: earlier calls first
  ctx.finishOp(seq_);
  done_ = true;
  return true;
}

std::string ConfirmingCall::describe(const Context& ctx) const {
  return withWaitedRanks(std::string(collectiveName(ctx.mailbox(ctx.rank(), seq_).call.coll)) + " #" +
                             std::to_string(seq_) +
                             " (latency path, returned; confirming every rank's call), ranks not yet arrived:",
                         ctx, *this);
}

void ConfirmingCall::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  for (int r = confirmed_; r < ctx.size(); ++r) {
    if (r != ctx.rank() && ctx.mailbox(r, seq_).seq.load(std::memory_order_acquire) != seq_) ranks.push_back(r);
  }
}

void EarlyCalls::push(uint64_t seq) {
  if (size() >= static_cast<size_t>(WaitSettings::kMaxRunAhead)) {
    throw Error(Status::kInternalError, "more calls returned before their confirmation than CFX_RUNAHEAD allows");
  }
  ring_[tail_ % kCapacity] = ConfirmingCall(seq);
  ++tail_;
}

bool EarlyCalls::confirm(Context& ctx) {
  bool moved = false;
  while (head_ != tail_) {
    ConfirmingCall& oldest = ring_[head_ % kCapacity];
    moved |= oldest.progress(ctx);
    if (!oldest.done()) break;
    ++head_;
  }
  return moved;
}

}  // namespace conflux
