// Every collective whose per-rank input fits a mailbox (2 KiB; AlltoAll and ReduceScatter: 1 KiB):
// the latency path.
//
// Each rank writes its input and its call into its mailbox, then publishes them with the operation's
// sequence number (one release store). A rank polls the sequence numbers of the ranks whose data it
// needs; the data arrives in the same cache lines as the flag, so there is no separate barrier and no
// descriptor line to fetch. Then it builds its output from the mailboxes: reductions run over all
// ranks in rank order, so every rank computes the same bits.
//
// Who reads whom: AllReduce, AllGather, ReduceScatter and AlltoAll read every rank; Reduce's root
// reads every rank and the others read no one; Broadcast's other ranks read the root and the root
// reads no one. A rank whose output is final before every rank has published (Broadcast's root and
// readers, Reduce's other ranks; any rank whose reads are done) is ready early: the engine returns
// the call then (as an eager send returns in MPI) and confirms it during the rank's later calls on
// the communicator, oldest first; at most CFX_RUNAHEAD calls await their confirmation at once.
// A rank that reads no one returns before looking at any peer's call, and the calls awaiting
// confirmation are looked at once half the window is used, then every kConfirmStride calls
// (runExpress), in bulk: a peer that finished an operation compared every rank's call with its
// own first, so one read of its `finished` counter confirms every operation up to it, where
// reading the mailboxes took a cache miss per operation (2-rank Broadcast and Reduce of 8 B: about
// 225 -> 185 ns per call on an Intel Xeon VM, perf/RESULTS.md 2026-11-28 (sixth)); the highest
// value read is kept (Context::somePeerFinished), so the line, which the peer writes at every
// call, is read once per look, not once per call confirmed.
//
// Confirmation: every rank compares its call with every other rank's, in their mailboxes of this
// sequence number, before the operation is done; only then, and after every earlier operation, is it
// marked finished. So ranks that disagree about anything (the collective, the count, the datatype,
// the op, the root) fail with cfxInvalidUsage on that call or, for a rank that returned early,
// within its next CFX_RUNAHEAD calls, whichever ranks read whom: two ranks that each believe they
// are Broadcast's root read no one, and still find each other here. A call that returns success
// still holds exactly what its own arguments give, from ranks that made the same call (a rank reads
// a mailbox only after comparing its call). A rank runs at most CFX_RUNAHEAD calls ahead of the
// slowest (with four ranks on two CPUs that lets each run many calls per time slice: 4-rank
// Broadcast of 8 B 2.30 -> 1.30 us, Reduce 2.58 -> 0.95 us, perf/RESULTS.md 2026-11-27 (fifth)).
//
// Reuse: each rank has kMailboxSlots mailboxes, used in turn by sequence number. Before writing one,
// a rank waits until every rank has finished (confirmed) the operation the mailbox last held: nobody
// reads it any more.
#include <cstring>
#include <utility>

#include "ops/mailbox_op.h"
#include "reduce/kernels.h"

namespace conflux {

MailboxOp::MailboxOp(const CollArgs& a, int nranks)
    : a_(a), esize_(reduce::dataTypeSize(a.datatype)), bytes_(mailboxInputBytes(a, nranks)), call_(callDescriptor(a)) {}

bool MailboxOp::progress(Context& ctx) {
  if (done_) return false;
  if (a_.count == 0) {
    done_ = true;
    return true;
  }
  const int n = ctx.size(), me = ctx.rank();
  bool moved = publishInMailbox(ctx, seq_, call_, published_, [&](Mailbox& mine) {
    // Broadcast: only the root has input; the others publish just their call.
    if (a_.coll != Coll::kBroadcast || me == a_.root) std::memcpy(mine.data, a_.send, bytes_);
  });
  if (!published_) return moved;
  if (!ready_) {
    for (; next_ < n; ++next_) {
      if (!reads(me, next_)) continue;
      if (!confirm(ctx, next_)) return moved;
    }
    consume(ctx);
    ready_ = true;
    moved = true;
    // A rank that reads no one (Broadcast's root, Reduce's other ranks) returns now and confirms
    // later, in bulk (ops/executor.h, runExpress): its peers' calls are seldom there yet.
    if (n > 1 && readsNoPeer(me)) return moved;
  } else if (confirmed_ < n && ctx.somePeerFinished(seq_)) {
    // A rank finishes an operation only after comparing every rank's call with its own, so all
    // the calls are the same: one look at a peer's `finished` line confirms this and every
    // earlier operation, where reading the peers' mailboxes would take a miss per operation.
    confirmed_ = n;
  }
  // Every other rank's call, as it comes: the output no longer depends on it.
  for (; confirmed_ < n; ++confirmed_) {
    if (!confirm(ctx, confirmed_)) return moved;
  }
  if (ctx.finishedByMe() + 1 != seq_) return moved;  // finished in order: earlier calls first
  ctx.finishOp(seq_);
  done_ = true;
  return true;
}

std::string MailboxOp::describe(const Context& ctx) const {
  std::string s = std::string(collectiveName(static_cast<int32_t>(a_.coll))) + " #" + std::to_string(seq_) + " (latency path";
  if (seq_ == 0) return s + ", not started: the earlier calls' confirmations first)";
  if (ready_) s += ", returned; confirming every rank's call";
  s += published_ ? "), ranks not yet arrived:" : "), waiting for ranks to finish reading its mailbox:";
  return withWaitedRanks(std::move(s), ctx, *this);
}

std::string withWaitedRanks(std::string what, const Context& ctx, const Op& op) {
  std::vector<int> r;
  op.waitingOn(ctx, r);
  for (int x : r) {
    what += ' ';
    what += std::to_string(ctx.commRank(x));
  }
  return what;
}

void MailboxOp::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (seq_ == 0) return;
  if (!published_) {
    ctx.allFinished(ctx.heldInMailbox(seq_), &ranks);
    return;
  }
  for (int r = ready_ ? confirmed_ : next_; r < ctx.size(); ++r) {
    if ((ready_ || reads(ctx.rank(), r)) && ctx.mailbox(r, seq_).seq.load(std::memory_order_acquire) != seq_) {
      ranks.push_back(r);
    }
  }
}

bool MailboxOp::readsNoPeer(int me) const {
  if (a_.coll == Coll::kBroadcast) return me == a_.root;
  return a_.coll == Coll::kReduce && me != a_.root;
}

bool MailboxOp::reads(int me, int r) const {
  if (a_.coll == Coll::kBroadcast) return me != a_.root && r == a_.root;
  if (a_.coll == Coll::kReduce) return me == a_.root;
  return true;
}

bool MailboxOp::confirm(const Context& ctx, int r) const { return peerMadeCall(ctx, seq_, call_, r); }

void MailboxOp::consume(Context& ctx) {
  const int n = ctx.size(), me = ctx.rank();
  auto* out = static_cast<std::byte*>(a_.recv);
  const size_t block = a_.count * esize_;
  const void* srcs[kMaxDirectRanks];
  switch (a_.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce:
      if (a_.coll == Coll::kReduce && me != a_.root) return;
      for (int r = 0; r < n; ++r) srcs[r] = ctx.mailbox(r, seq_).data;
      reduce::reduce(out, srcs, n, a_.count, a_.datatype, a_.op, n);
      return;
    case Coll::kReduceScatter:
      for (int r = 0; r < n; ++r) srcs[r] = ctx.mailbox(r, seq_).data + me * block;
      reduce::reduce(out, srcs, n, a_.count, a_.datatype, a_.op, n);
      return;
    case Coll::kBroadcast:
      if (me != a_.root || a_.send != a_.recv) std::memcpy(out, ctx.mailbox(a_.root, seq_).data, block);
      return;
    case Coll::kAllGather:
      for (int r = 0; r < n; ++r) std::memcpy(out + r * block, ctx.mailbox(r, seq_).data, block);
      return;
    case Coll::kAlltoAll:
      for (int r = 0; r < n; ++r) std::memcpy(out + r * block, ctx.mailbox(r, seq_).data + me * block, block);
      return;
  }
}

std::unique_ptr<Op> makeMailboxOp(const CollArgs& a, int nranks) { return std::make_unique<MailboxOp>(a, nranks); }

}  // namespace conflux
