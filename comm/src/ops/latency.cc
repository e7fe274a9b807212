// Every collective whose per-rank input fits a mailbox (1 KiB): the latency path.
//
// Each rank writes its input and a hash of the call into its mailbox, then publishes them with
// the operation's sequence number (one release store). Every rank polls the others' sequence
// numbers; the data arrives in the same cache lines as the flag, so there is no separate barrier
// and no descriptor line to fetch. Once all are there, each rank builds its output from the
// mailboxes: reductions run over all ranks in rank order, so every rank computes the same bits.
//
// Reuse is safe without a trailing barrier: mailboxes alternate with the sequence parity, and a
// rank can only publish operation i+2 after seeing every peer publish i+1, which each peer does
// only after it has finished reading operation i.
#include <cstring>

#include "ops/latency.h"
#include "reduce/kernels.h"

namespace conflux {

namespace {

class MailboxOp : public Op {
 public:
  MailboxOp(const CollArgs& a, int nranks)
      : a_(a), esize_(reduce::dataTypeSize(a.datatype)), bytes_(inputBytes(a, nranks)) {
    call_ = callDescriptor(a);
  }

  bool progress(Context& ctx) override {
    if (done_) return false;
    if (a_.count == 0) {
      done_ = true;
      return true;
    }
    const int n = ctx.size();
    bool moved = false;
    if (seq_ == 0) {
      seq_ = ctx.nextOpSeq();
      call_.seq = seq_;
      Mailbox& mine = ctx.mailbox(ctx.rank(), seq_);
      // Broadcast: only the root has input; the others publish just their arrival.
      if (a_.coll != Coll::kBroadcast || ctx.rank() == a_.root) std::memcpy(mine.data, a_.send, bytes_);
      mine.call = call_;
      mine.seq.store(seq_, std::memory_order_release);
      ctx.ringAll();
      moved = true;
    }
    for (; next_ < n; ++next_) {
      const Mailbox& box = ctx.mailbox(next_, seq_);
      if (box.seq.load(std::memory_order_acquire) != seq_) return moved;
      if (!(box.call == call_)) throwMismatch(ctx.commRank(ctx.rank()), call_, ctx.commRank(next_), box.call);
    }
    consume(ctx);
    done_ = true;
    return true;
  }

  bool done() const override { return done_; }

  std::string describe(const Context& ctx) const override {
    static const char* const kNames[] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter", "AlltoAll"};
    std::string s = std::string(kNames[static_cast<int>(a_.coll)]) + " (latency path), ranks not yet arrived:";
    std::vector<int> r;
    waitingOn(ctx, r);
    for (int x : r) s += " " + std::to_string(ctx.commRank(x));
    return s;
  }

  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override {
    if (seq_ == 0) return;
    for (int r = next_; r < ctx.size(); ++r) {
      if (ctx.mailbox(r, seq_).seq.load(std::memory_order_acquire) != seq_) ranks.push_back(r);
    }
  }

 private:
  // Builds this rank's output from every rank's mailbox.
  void consume(Context& ctx) {
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

  // Bytes of one rank's input: ReduceScatter and AlltoAll send n blocks.
  static size_t inputBytes(const CollArgs& a, int nranks) {
    size_t b = a.count * reduce::dataTypeSize(a.datatype);
    return (a.coll == Coll::kReduceScatter || a.coll == Coll::kAlltoAll) ? b * nranks : b;
  }

  CollArgs a_;
  size_t esize_;
  size_t bytes_;
  OpDescriptor call_;
  uint64_t seq_ = 0;
  int next_ = 0;  // ranks below this one have published
  bool done_ = false;
};

}  // namespace

bool fitsMailbox(const CollArgs& a, int nranks) {
  size_t b = a.count * reduce::dataTypeSize(a.datatype);
  if (a.coll == Coll::kReduceScatter || a.coll == Coll::kAlltoAll) b *= nranks;
  return nranks <= kMaxDirectRanks && b <= kMailboxBytes;
}

std::unique_ptr<Op> makeMailboxOp(const CollArgs& a, int nranks) { return std::make_unique<MailboxOp>(a, nranks); }

}  // namespace conflux
