// The check of a v-collective on one host, on the latency path's mailboxes (vector_coll.h).
//
// Each rank writes its line into its mailbox of the operation's sequence number: the call's header,
// its sendcounts and recvcounts, then the blocks the line carries (VectorLine: each peer's block in
// a slot of its own; AllGatherv's one block once), with a descriptor of the call; the blocks too
// large for the line but not for a share of its box go into its box of that number (written once
// every rank has finished the operation kVectorBoxes before: a group's calls publish together, and
// one that waits must not be overtaken by a later one that takes its box); one release store
// publishes them all. It is the protocol of the latency path's collectives (ops/mailbox_op.cc):
// the same sequence numbers, the same rule for reusing a mailbox (once every rank finished the
// operation it last held), operations finished in order. So a rank that made another collective call at this
// point finds the mismatch in the descriptor, whichever path that call took.
//
// A rank reads every rank's line where it lies, runs checkLines on them (every rank the same
// verdict), then copies its own block and the blocks the lines carry for it into its output, or,
// for ReduceScatterv, reduces them there in rank order. Only then does it finish the operation, and
// the Recvs of the blocks too large for a line start (made with the call, vector_coll.cc; their
// Sends started with the check).
// Where a 2-rank AlltoAllv of 8 B blocks gathered fixed lines of 320 B and made a Send and a Recv
// per peer that never ran, it now moves a cache line or two per peer and makes no Send/Recv.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "common/error.h"
#include "ops/mailbox_op.h"
#include "reduce/kernels.h"
#include "engine.h"
#include "vector_call.h"

namespace conflux {

namespace {

OpDescriptor descriptorOf(const VectorArgs& a) {
  OpDescriptor d;
  d.coll = kFirstVectorColl + static_cast<int32_t>(a.kind);
  d.datatype = a.datatype;
  d.op = a.kind == VectorKind::kReduceScatterv ? a.op : -1;
  d.root = -1;
  return d;
}

class MailboxCheckOp final : public Op {
 public:
  explicit MailboxCheckOp(std::shared_ptr<VectorCall> s) : MailboxCheckOp(*s) { owner_ = std::move(s); }
  // The quick path's value (runQuickCheck): `s` outlives it, or it moves to the heap first.
  explicit MailboxCheckOp(VectorCall& s)
      : s_(&s), line_{s.n, s.a.kind}, call_(descriptorOf(s.a)), boxed_(writesBox(s, line_)) {}
  // This operation's state, on the call `owner`.
  MailboxCheckOp(const MailboxCheckOp& o, std::shared_ptr<VectorCall> owner) : MailboxCheckOp(o) {
    s_ = owner.get();
    owner_ = std::move(owner);
  }

  bool progress(Context& ctx) override;
  bool done() const override { return done_; }
  bool runsAhead() const override { return true; }
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;

 private:
  static bool writesBox(const VectorCall& s, const VectorLine& line) {
    for (int to = 0; to < s.n; ++to) {
      if (to != s.me && line.inBox(s.a.sendCounts[to] * s.esize)) return true;
    }
    return false;
  }
  // The operation this rank waits for every rank to finish before it publishes: the one its
  // mailbox last held, or, when it writes its box, the one kVectorBoxes before if later.
  uint64_t boxGate() const { return boxed_ && seq_ > kVectorBoxes ? seq_ - kVectorBoxes : 0; }
  uint64_t gate(const Context& ctx) const { return std::max(ctx.heldInMailbox(seq_), boxGate()); }
  // This rank's line into its mailbox (header, counts, the blocks the line carries) and the blocks
  // for its box.
  void publish(const Context& ctx, Mailbox& box) const;
  void consume(const Context& ctx) const;
  // Rank r's block of `bytes` for this rank, in r's line or box.
  const std::byte* blockFrom(const Context& ctx, int r, size_t bytes) const {
    if (line_.carries(bytes)) return ctx.mailbox(r, seq_).data + line_.offset(r, s_->me);
    return ctx.vectorBox(r, seq_) + line_.boxOffset(r, s_->me);
  }

  VectorCall* s_;
  std::shared_ptr<VectorCall> owner_;  // empty on the quick path
  VectorLine line_;
  OpDescriptor call_;
  bool boxed_;  // this rank sends a block in its box
  uint64_t seq_ = 0;
  bool published_ = false;
  int next_ = 0;  // the ranks below this one have published
  bool checked_ = false;
  bool done_ = false;
};

bool MailboxCheckOp::progress(Context& ctx) {
  if (done_) return false;
  const int n = ctx.size(), me = ctx.rank();
  bool moved = false;
  if (seq_ == 0) {
    seq_ = ctx.nextOpSeq();
    call_.seq = seq_;
    moved = true;
  }
  if (!published_ && !ctx.allFinished(boxGate())) return moved;  // still read
  moved |= publishInMailbox(ctx, seq_, call_, published_, [&](Mailbox& mine) { publish(ctx, mine); });
  if (!published_) return moved;
  if (!checked_) {
    for (; next_ < n; ++next_) {
      if (next_ == me) continue;
      const Mailbox& box = ctx.mailbox(next_, seq_);
      if (box.seq.load(std::memory_order_acquire) != seq_) return moved;
      // Another v-collective is named by checkLines, the same on every rank; anything else now.
      if (box.call.coll < kFirstVectorColl && !(box.call == call_)) {
        throwMismatch(ctx.commRank(me), call_, ctx.commRank(next_), box.call);
      }
    }
    VectorCall& s = *s_;
    s.ctx = &ctx;
    s.seq = seq_;
    checkLines(s);
    consume(ctx);
    s.agreed = true;
    checked_ = true;
    moved = true;
  }
  if (ctx.finishedByMe() + 1 != seq_) return moved;  // finished in order: earlier calls first
  ctx.finishOp(seq_);
  done_ = true;
  return true;
}

void MailboxCheckOp::publish(const Context& ctx, Mailbox& box) const {
  const VectorCall& s = *s_;
  auto* words = reinterpret_cast<uint64_t*>(box.data);
  words[0] = headerOf(s.a);
  for (int r = 0; r < s.n; ++r) {
    words[1 + r] = s.a.sendCounts[r];
    words[1 + s.n + r] = s.a.recvCounts[r];
  }
  for (int to = 0; to < s.n; ++to) {
    const size_t bytes = s.a.sendCounts[to] * s.esize;
    if (to == s.me || bytes == 0 || !line_.withCheck(bytes)) continue;
    std::byte* at = line_.carries(bytes) ? box.data + line_.offset(s.me, to)
                                         : ctx.vectorBox(s.me, seq_) + line_.boxOffset(s.me, to);
    std::memcpy(at, s.sendPtr(to), bytes);
    if (s.a.kind == VectorKind::kAllGatherv) return;  // one block, read by every peer
  }
}

void MailboxCheckOp::consume(const Context& ctx) const {
  const VectorCall& s = *s_;
  s.copyOwnBlock();
  if (s.a.kind != VectorKind::kReduceScatterv) {
    for (int r = 0; r < s.n; ++r) {
      const size_t bytes = s.a.recvCounts[r] * s.esize;
      if (r == s.me || bytes == 0 || !line_.withCheck(bytes)) continue;
      std::memcpy(static_cast<std::byte*>(s.a.recv) + s.a.recvDispls[r] * s.esize, blockFrom(ctx, r, bytes), bytes);
    }
    return;
  }
  // ReduceScatterv: every peer's block for this rank has recvcounts[me] elements, so the lines or
  // the boxes carry all of them or none (then ReduceReceivedOp reduces what Recv brought).
  const size_t count = s.a.recvCounts[s.me], bytes = count * s.esize;
  if (count == 0 || !line_.withCheck(bytes)) return;
  const void* srcs[kMaxDirectRanks];
  alignas(64) std::byte own[VectorLine::kLineBytes];
  std::unique_ptr<std::byte[]> ownBig;  // a block from a box
  const std::byte* mine = s.sendPtr(s.me);
  if (mine == s.a.recv) {  // in place: the kernel's output may not alias an input
    std::byte* copy = own;
    if (bytes > sizeof(own)) {
      ownBig = std::make_unique_for_overwrite<std::byte[]>(bytes);
      copy = ownBig.get();
    }
    std::memcpy(copy, mine, bytes);
    mine = copy;
  }
  for (int r = 0; r < s.n; ++r) srcs[r] = r == s.me ? mine : blockFrom(ctx, r, bytes);
  reduce::reduce(s.a.recv, srcs, s.n, count, s.a.datatype, s.a.op, s.n);
}

std::string MailboxCheckOp::describe(const Context& ctx) const {
  std::string s = std::string(vectorKindName(s_->a.kind)) + " #" + std::to_string(seq_) + " (latency path";
  s += published_ ? "), checking every rank's counts; ranks not yet arrived:"
                  : boxed_ ? "), waiting for ranks to finish reading its mailbox and box:"
                           : "), waiting for ranks to finish reading its mailbox:";
  return withWaitedRanks(std::move(s), ctx, *this);
}

void MailboxCheckOp::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (seq_ == 0 || checked_) return;
  if (!published_) {
    ctx.allFinished(gate(ctx), &ranks);
    return;
  }
  for (int r = next_; r < ctx.size(); ++r) {
    if (r != ctx.rank() && ctx.mailbox(r, seq_).seq.load(std::memory_order_acquire) != seq_) ranks.push_back(r);
  }
}

}  // namespace

std::unique_ptr<Op> makeMailboxCheck(std::shared_ptr<VectorCall> s) { return std::make_unique<MailboxCheckOp>(std::move(s)); }

bool runQuickCheck(Engine& engine, VectorCall& s, const flight::Call& call, Stream* stream, Outcome& out) {
  MailboxCheckOp op(s);
  struct ToHeap final : QuickSpill {
    MailboxCheckOp& op;
    VectorCall& s;
    ToHeap(MailboxCheckOp& o, VectorCall& c) : op(o), s(c) {}
    std::unique_ptr<Op> toHeap() override {
      return std::make_unique<MailboxCheckOp>(op, std::make_shared<VectorCall>(std::move(s)));
    }
  } spill(op, s);
  return engine.runQuick(op, call, stream, out, spill);
}

}  // namespace conflux
