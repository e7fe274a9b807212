// The latency path for collectives whose per-rank input fits a mailbox (ops/mailbox_op.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/op.h"
#include "reduce/type_size.h"
#include "shm_layout.h"

namespace conflux {

inline constexpr int kMaxDirectRanks = 64;
// AlltoAll and ReduceScatter (n blocks per rank) take the mailbox path up to this much input per
// rank, less than a mailbox holds: from 2 KiB the staged path was as fast or faster (2-rank
// AlltoAll of 2 KiB, median us: 0.35-0.40 staged, 0.46 on 2 KiB mailboxes; perf/RESULTS.md,
// 2026-11-29 (ninth)).
inline constexpr size_t kMailboxBlocksMaxBytes = 1024;
static_assert(kMailboxBlocksMaxBytes <= kMailboxBytes);

// Bytes of one rank's input on the mailbox path: ReduceScatter and AlltoAll send n blocks.
inline size_t mailboxInputBytes(const CollArgs& a, int nranks) {
  const size_t b = a.count * reduce::dataTypeSize(a.datatype);
  return (a.coll == Coll::kReduceScatter || a.coll == Coll::kAlltoAll) ? b * nranks : b;
}

// Whether a call can take the mailbox path. Inline: every small call asks.
inline bool fitsMailbox(const CollArgs& a, int nranks) {
  const bool blocks = a.coll == Coll::kReduceScatter || a.coll == Coll::kAlltoAll;
  return nranks <= kMaxDirectRanks && mailboxInputBytes(a, nranks) <= (blocks ? kMailboxBlocksMaxBytes : kMailboxBytes);
}

// The first steps of an operation on the mailboxes (MailboxOp; the v-collectives' check,
// vector_mailbox_op.cc): number it on its first progress (`seq`, `call.seq`); then, once every rank
// has finished the operation this rank's mailbox last held (nobody reads it any more), let `fill`
// write the data, store the call and publish both with one release store of the sequence number
// (`published`). The peers are rung by the flushRing() that ends the call or starts its wait.
// Returns whether anything moved.
template <class Fill>
bool publishInMailbox(Context& ctx, uint64_t& seq, OpDescriptor& call, bool& published, Fill&& fill) {
  bool moved = false;
  if (seq == 0) {
    seq = ctx.nextOpSeq();
    call.seq = seq;
    moved = true;
  }
  if (published) return moved;
  Mailbox& mine = ctx.mailbox(ctx.rank(), seq);
  if (!ctx.allFinished(ctx.heldInMailbox(seq))) return moved;  // still read
  fill(mine);
  mine.call = call;
  ctx.publishMailbox(mine, seq);
  published = true;
  ctx.oweRing();
  return true;
}

// Whether rank r has published its call of number `seq` (mailbox `seq`), the same as `mine`; throws
// the mismatch when it differs.
inline bool peerMadeCall(const Context& ctx, uint64_t seq, const OpDescriptor& mine, int r) {
  if (r == ctx.rank()) return true;
  const Mailbox& box = ctx.mailbox(r, seq);
  if (box.seq.load(std::memory_order_acquire) != seq) return false;
  if (!(box.call == mine)) throwMismatch(ctx.commRank(ctx.rank()), mine, ctx.commRank(r), box.call);
  return true;
}

// `what`, then the communicator ranks `op` waits on (Op::waitingOn), each after a space: a
// latency-path operation's describe().
std::string withWaitedRanks(std::string what, const Context& ctx, const Op& op);

// One call on the mailbox path. A value, so that the API can run it without a heap block
// (Engine::runQuick); copied to the heap when it must wait. One that returned early is confirmed
// by its number alone (ops/early_calls.h).
class MailboxOp final : public Op {
 public:
  MailboxOp(const CollArgs& a, int nranks);

  bool progress(Context& ctx) override;
  bool done() const override { return done_; }
  uint64_t readyEarly() const override { return ready_ && !done_ ? seq_ : 0; }
  bool runsAhead() const override { return true; }
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;

 private:
  // Whether rank `me` needs rank r's mailbox for its output.
  bool reads(int me, int r) const;
  // Whether rank `me` reads no peer's mailbox (its output is its own input, or nothing).
  bool readsNoPeer(int me) const;
  // Whether rank r has published this operation with the same call; throws the mismatch.
  bool confirm(const Context& ctx, int r) const;
  // Builds this rank's output from the mailboxes it reads.
  void consume(Context& ctx);

  CollArgs a_;
  size_t esize_;
  size_t bytes_;
  OpDescriptor call_;
  uint64_t seq_ = 0;
  bool published_ = false;
  int next_ = 0;        // the ranks below this one that it reads have published
  bool ready_ = false;  // the output is built
  int confirmed_ = 0;   // the ranks below this one made the same call
  bool done_ = false;
};

std::unique_ptr<Op> makeMailboxOp(const CollArgs& a, int nranks);

}  // namespace conflux
