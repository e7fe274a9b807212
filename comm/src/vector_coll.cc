#include "vector_coll.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "communicator.h"
#include "reduce/kernels.h"
#include "vector_call.h"

namespace conflux {

const char* vectorKindName(VectorKind kind) {
  switch (kind) {
    case VectorKind::kAlltoAllv:
      return "AlltoAllv";
    case VectorKind::kAllGatherv:
      return "AllGatherv";
    case VectorKind::kReduceScatterv:
      return "ReduceScatterv";
  }
  return "unknown v-collective";
}

namespace {

// 1. The check across hosts: an AllGather of every rank's line, then the same verdict on every
// rank (on one host: makeMailboxCheck).
class CheckOp : public Op {
 public:
  CheckOp(std::shared_ptr<VectorCall> s, std::unique_ptr<Op> gather) : s_(std::move(s)), gather_(std::move(gather)) {
    flightId = gather_->flightId;
    gather_->flightId = 0;
  }
  bool progress(Context& ctx) override {
    if (done_) return false;
    if (!packed_) {  // when the call runs, not when it was issued (a stream's earlier work may write it)
      packInput();
      packed_ = true;
    }
    const bool moved = gather_->progress(ctx);
    if (!gather_->done()) return moved;
    checkLines(*s_);
    VectorCall& s = *s_;
    s.inLines = true;
    for (int r = 0; r < s.n && s.inLines; ++r) s.inLines = s.sendTotal(r) * s.esize <= s.dataWords() * 8;
    if (s.inLines) {
      copyFromLines();
    } else {
      s.copyOwnBlock();
    }
    s.agreed = true;
    done_ = true;
    return true;
  }
  bool done() const override { return done_; }
  std::string describe(const Context& ctx) const override {
    return std::string(vectorKindName(s_->a.kind)) + ": checking every rank's counts: " + gather_->describe(ctx);
  }
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override { gather_->waitingOn(ctx, ranks); }
  void waitingAcross(std::vector<int>& ranks) const override { gather_->waitingAcross(ranks); }
  std::string crossedCall(uint32_t oldestOpen) const override { return gather_->crossedCall(oldestOpen); }
  uint32_t callSeq() const override { return gather_->callSeq(); }

 private:
  // This rank's input into its line, if it fits.
  void packInput() {
    VectorCall& s = *s_;
    size_t total = 0;
    for (int to = 0; to < s.n; ++to) total += s.a.sendCounts[to];
    if (total * s.esize > s.dataWords() * 8) return;
    auto* at = reinterpret_cast<std::byte*>(&s.line[s.countWords()]);
    for (int to = 0; to < s.n; ++to) {
      const size_t bytes = s.a.sendCounts[to] * s.esize;
      if (bytes > 0) std::memcpy(at, s.sendPtr(to), bytes);
      at += bytes;
    }
  }

  // Every block for this rank, from the lines (ReduceScatterv reduces them itself).
  void copyFromLines() {
    VectorCall& s = *s_;
    if (s.a.kind == VectorKind::kReduceScatterv) return;
    for (int r = 0; r < s.n; ++r) {
      const size_t bytes = s.a.recvCounts[r] * s.esize;
      if (bytes > 0) std::memcpy(s.recvPtr(r), s.blockInLines(r, s.me), bytes);
    }
  }

  std::shared_ptr<VectorCall> s_;
  std::unique_ptr<Op> gather_;
  bool packed_ = false;
  bool done_ = false;
};

// 2. A Send or Recv of the call, held until the check has passed.
class HeldOp : public Op {
 public:
  HeldOp(std::shared_ptr<VectorCall> s, std::unique_ptr<Op> inner) : s_(std::move(s)), inner_(std::move(inner)) {
    flightId = inner_->flightId;
    inner_->flightId = 0;
  }
  bool progress(Context& ctx) override { return s_->agreed && !s_->inLines && inner_->progress(ctx); }
  bool done() const override { return s_->inLines || inner_->done(); }
  std::string describe(const Context& ctx) const override {
    std::string s = std::string(vectorKindName(s_->a.kind)) + ": " + inner_->describe(ctx);
    return s_->agreed ? s : s + ", held until every rank's counts are checked";
  }
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override {
    if (s_->agreed && !s_->inLines) inner_->waitingOn(ctx, ranks);
  }
  void waitingAcross(std::vector<int>& ranks) const override {
    if (s_->agreed && !s_->inLines) inner_->waitingAcross(ranks);
  }
  bool isPointToPoint() const override { return true; }
  int peer() const override { return inner_->peer(); }
  bool isSend() const override { return inner_->isSend(); }
  uint32_t callSeq() const override { return inner_->callSeq(); }

 private:
  std::shared_ptr<VectorCall> s_;
  std::unique_ptr<Op> inner_;
};

// 2'. The padded path: the hierarchical collective on padded blocks, held until the check has
// passed (paddedBlock guarantees the data did not travel in the check's lines).
class PaddedOp : public Op {
 public:
  PaddedOp(std::shared_ptr<VectorCall> s, std::unique_ptr<Op> inner) : s_(std::move(s)), inner_(std::move(inner)) {
    flightId = inner_->flightId;
    inner_->flightId = 0;
  }
  bool progress(Context& ctx) override {
    if (done_ || !s_->agreed) return false;
    if (s_->inLines) throw Error(Status::kInternalError, "v-collective: padded path with data in the check");
    if (!packed_) {
      pack();
      packed_ = true;
    }
    const bool moved = inner_->progress(ctx);
    if (!inner_->done()) return moved;
    unpack();
    done_ = true;
    return true;
  }
  bool done() const override { return done_; }
  std::string describe(const Context& ctx) const override {
    std::string s = std::string(vectorKindName(s_->a.kind)) + " on blocks padded to " + std::to_string(s_->pad) +
                    " elements: " + inner_->describe(ctx);
    return s_->agreed ? s : s + ", held until every rank's counts are checked";
  }
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override {
    if (s_->agreed) inner_->waitingOn(ctx, ranks);
  }
  void waitingAcross(std::vector<int>& ranks) const override {
    if (s_->agreed) inner_->waitingAcross(ranks);
  }
  // Not before it starts: a message of the check that arrived before its receive would otherwise
  // read as one of a call this rank had finished.
  std::string crossedCall(uint32_t oldestOpen) const override {
    return s_->agreed ? inner_->crossedCall(oldestOpen) : std::string();
  }
  uint32_t callSeq() const override { return inner_->callSeq(); }

 private:
  // Into the padded input, when the call runs: AllGatherv this rank's block at its place;
  // ReduceScatterv every block at its place (the padding stays zero).
  void pack() {
    VectorCall& s = *s_;
    const size_t block = s.pad * s.esize;
    if (s.a.kind == VectorKind::kAllGatherv) {
      const size_t bytes = s.a.sendCounts[s.me] * s.esize;
      if (bytes > 0) std::memcpy(s.padIn->data() + s.me * block, s.sendPtr(s.me), bytes);
      return;
    }
    for (int r = 0; r < s.n; ++r) {
      const size_t bytes = s.a.sendCounts[r] * s.esize;
      if (bytes > 0) std::memcpy(s.padIn->data() + r * block, s.sendPtr(r), bytes);
    }
  }
  void unpack() {
    VectorCall& s = *s_;
    const size_t block = s.pad * s.esize;
    if (s.a.kind == VectorKind::kReduceScatterv) {
      const size_t bytes = s.a.recvCounts[s.me] * s.esize;
      if (bytes > 0) std::memcpy(s.a.recv, s.padOut->data(), bytes);
      return;
    }
    for (int r = 0; r < s.n; ++r) {
      const size_t bytes = s.a.recvCounts[r] * s.esize;
      if (bytes > 0) std::memmove(s.recvPtr(r), s.padIn->data() + r * block, bytes);
    }
  }

  std::shared_ptr<VectorCall> s_;
  std::unique_ptr<Op> inner_;
  bool packed_ = false;
  bool done_ = false;
};

// 3. ReduceScatterv's reduction of this rank's block, once every block has arrived.
class ReduceReceivedOp : public Op {
 public:
  ReduceReceivedOp(std::shared_ptr<VectorCall> s, std::vector<const Op*> recvs) : s_(std::move(s)), recvs_(std::move(recvs)) {}
  bool progress(Context& /*ctx*/) override {
    if (done_ || !s_->agreed) return false;
    for (const Op* r : recvs_) {
      if (!r->done()) return false;
    }
    VectorCall& s = *s_;
    const size_t count = s.a.recvCounts[s.me];
    if (count > 0) {
      std::vector<const void*> srcs(s.n);
      std::vector<std::byte> own;
      const std::byte* mine = s.sendPtr(s.me);
      if (s.inLines) {
        for (int r = 0; r < s.n; ++r) srcs[r] = s.blockInLines(r, s.me);
      } else {
        if (mine == s.a.recv) {  // in place: the kernel's output may not alias an input
          own.assign(mine, mine + count * s.esize);
          mine = own.data();
        }
        for (int r = 0; r < s.n; ++r) srcs[r] = r == s.me ? mine : s.received[r].data();
      }
      reduce::reduce(s.a.recv, srcs.data(), s.n, count, s.a.datatype, s.a.op, s.n);
    }
    done_ = true;
    return true;
  }
  bool done() const override { return done_; }
  std::string describe(const Context& ctx) const override {
    std::string s = "ReduceScatterv: reducing once every block arrived; waiting for:";
    for (const Op* r : recvs_) {
      if (!r->done()) s += " " + r->describe(ctx) + ";";
    }
    return s;
  }
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override {
    for (const Op* r : recvs_) {
      if (!r->done()) r->waitingOn(ctx, ranks);
    }
  }
  void waitingAcross(std::vector<int>& ranks) const override {
    for (const Op* r : recvs_) {
      if (!r->done()) r->waitingAcross(ranks);
    }
  }

 private:
  std::shared_ptr<VectorCall> s_;
  std::vector<const Op*> recvs_;
  bool done_ = false;
};

}  // namespace

size_t paddedBlock(std::span<const size_t> counts, size_t esize, int nhosts, double maxPadding, size_t lineBytes) {
  if (nhosts < 2 || counts.empty() || maxPadding <= 0) return 0;
  size_t total = 0, largest = 0;
  for (size_t c : counts) {
    total += c;
    largest = std::max(largest, c);
  }
  if (total * esize <= lineBytes) return 0;
  const double padded = static_cast<double>(largest) * static_cast<double>(counts.size());
  return padded <= static_cast<double>(total) * (1.0 + maxPadding) ? largest : 0;
}

namespace {

flight::Call flightCallOf(const VectorArgs& a, int me) {
  size_t total = 0;
  for (size_t c : a.sendCounts) total += c;
  if (a.kind == VectorKind::kAllGatherv) total = a.sendCounts[me];
  return flight::Call{vectorKindName(a.kind), total, a.datatype, a.kind == VectorKind::kReduceScatterv ? a.op : -1, -1};
}

// Sends to the next ranks in ring order and receives from the previous ones, so that not every
// rank starts with rank 0; they all progress together (one per peer and direction). Blocks for
// which `inCheck` holds travel with the check instead. The receives wait for the check, so no
// output is written before every rank's counts agree; the sends wait too where the check may find
// that the data travelled with it (`holdSends`), else they start with it: a send that runs ahead
// of a check that fails leaves a message no one reads, on a communicator the failure leaves failed
// (Engine::attempt). 4-rank AlltoAllv of 512 B to 2 KiB blocks on 2 CPUs: see vector_coll.h.
template <class InCheck>
void addTransfers(const Communicator& comm, const std::shared_ptr<VectorCall>& s, InCheck inCheck, bool holdSends,
                  std::vector<std::unique_ptr<Op>>& ops) {
  const int n = s->n, me = s->me;
  std::vector<const Op*> recvs;
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n;
    const size_t bytes = s->a.sendCounts[to] * s->esize;
    if (bytes == 0 || inCheck(bytes)) continue;
    std::unique_ptr<Op> send = comm.send(s->sendPtr(to), bytes, to, true);
    ops.push_back(holdSends ? std::make_unique<HeldOp>(s, std::move(send)) : std::move(send));
  }
  for (int k = 1; k < n; ++k) {
    const int from = (me - k + n) % n;
    const size_t bytes = s->a.recvCounts[from] * s->esize;
    if (bytes == 0 || inCheck(bytes)) continue;
    if (s->a.kind == VectorKind::kReduceScatterv) s->received[from].resize(bytes);
    ops.push_back(std::make_unique<HeldOp>(s, comm.recv(s->recvPtr(from), bytes, from)));
    recvs.push_back(ops.back().get());
  }
  const size_t mine = s->a.recvCounts[me] * s->esize;
  if (s->a.kind == VectorKind::kReduceScatterv && mine > 0 && !inCheck(mine)) {
    ops.push_back(std::make_unique<ReduceReceivedOp>(s, std::move(recvs)));
  }
}

}  // namespace

VectorArgs::VectorArgs(VectorKind k, const void* s, void* r, int nranks, cfxDataType_t type, cfxRedOp_t redOp)
    : kind(k), send(s), recv(r), datatype(type), op(redOp) {
  const size_t n = static_cast<size_t>(nranks);
  if (n > kInlineRanks) heap_.resize(4 * n);
  bind(n);
  std::fill_n(sendCounts.data(), 4 * n, size_t{0});
}

VectorArgs::VectorArgs(VectorArgs&& o) noexcept
    : kind(o.kind), send(o.send), recv(o.recv), datatype(o.datatype), op(o.op), keep(std::move(o.keep)),
      heap_(std::move(o.heap_)) {
  const size_t n = o.sendCounts.size();
  if (heap_.empty()) std::copy_n(o.sendCounts.data(), 4 * n, inline_);
  bind(n);
}

VectorArgs& VectorArgs::operator=(VectorArgs&& o) noexcept {
  if (this == &o) return *this;
  kind = o.kind;
  send = o.send;
  recv = o.recv;
  datatype = o.datatype;
  op = o.op;
  keep = std::move(o.keep);
  heap_ = std::move(o.heap_);
  const size_t n = o.sendCounts.size();
  if (heap_.empty()) std::copy_n(o.sendCounts.data(), 4 * n, inline_);
  bind(n);
  return *this;
}

void VectorArgs::bind(size_t n) {
  size_t* at = heap_.empty() ? inline_ : heap_.data();
  sendCounts = std::span<size_t>(at, n);
  sendDispls = std::span<size_t>(at + n, n);
  recvCounts = std::span<size_t>(at + 2 * n, n);
  recvDispls = std::span<size_t>(at + 3 * n, n);
}

bool runQuickVector(Communicator& comm, VectorArgs& args, Stream* stream, Outcome& out) {
  const int n = comm.size(), me = comm.rank();
  if (!comm.onOneHost() || n > VectorLine::kMaxLineRanks) return false;
  const VectorLine line{n, args.kind};
  const size_t esize = reduce::dataTypeSize(args.datatype);
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    const size_t sent = args.sendCounts[r] * esize, received = args.recvCounts[r] * esize;
    if ((sent > 0 && !line.withCheck(sent)) || (received > 0 && !line.withCheck(received))) return false;
  }
  // ReduceScatterv reduces in the check only the blocks the lines or boxes carry (addTransfers).
  const size_t mine = args.recvCounts[me] * esize;
  if (args.kind == VectorKind::kReduceScatterv && mine > 0 && !line.withCheck(mine)) return false;
  VectorCall s(std::move(args), n, me);
  if (runQuickCheck(comm.engine(), s, flightCallOf(s.a, me), stream, out)) return true;
  args = std::move(s.a);
  return false;
}

std::vector<std::unique_ptr<Op>> makeVectorCollective(const Communicator& comm, VectorArgs args) {
  auto s = std::make_shared<VectorCall>(std::move(args), comm.size(), comm.rank());
  const int n = s->n, me = s->me;
  std::vector<std::unique_ptr<Op>> ops;
  if (comm.onOneHost() && n <= VectorLine::kMaxLineRanks) {
    ops.push_back(comm.recorded(makeMailboxCheck(s), flightCallOf(s->a, me)));
    const VectorLine line{n, s->a.kind};
    addTransfers(comm, s, [&](size_t bytes) { return line.withCheck(bytes); }, false, ops);
    return ops;
  }
  s->line.reserve(s->width());
  s->line.push_back(headerOf(s->a));
  for (int r = 0; r < n; ++r) s->line.push_back(s->a.sendCounts[r]);
  for (int r = 0; r < n; ++r) s->line.push_back(s->a.recvCounts[r]);
  s->line.resize(s->width(), 0);
  s->lines.resize(s->width() * n);
  CollArgs gather{Coll::kAllGather, s->line.data(), s->lines.data(), s->width(), cfxUint64, cfxSum, -1};
  ops.push_back(std::make_unique<CheckOp>(s, comm.collective(gather, vectorKindName(s->a.kind))));
  // The counts every rank passes alike: AllGatherv's recvcounts, ReduceScatterv's recvcounts.
  const std::span<const size_t> even = s->a.kind == VectorKind::kAllGatherv ? s->a.recvCounts : s->a.sendCounts;
  if (s->a.kind != VectorKind::kAlltoAllv && !reduce::isExactOp(s->a.op)) {
    s->pad = paddedBlock(even, s->esize, comm.hosts().nhosts(), comm.tuning().vcollPadding, s->dataWords() * 8);
  }
  if (s->pad > 0) {
    const size_t block = s->pad * s->esize;
    s->padIn = comm.scratch().take(block * n);
    if (s->a.kind == VectorKind::kAllGatherv) {
      CollArgs g{Coll::kAllGather, s->padIn->data() + me * block, s->padIn->data(), s->pad, s->a.datatype, cfxSum, -1};
      ops.push_back(std::make_unique<PaddedOp>(s, comm.collective(g, "AllGatherv")));
    } else {
      s->padOut = comm.scratch().take(block);
      CollArgs rs{Coll::kReduceScatter, s->padIn->data(), s->padOut->data(), s->pad, s->a.datatype, s->a.op, -1};
      ops.push_back(std::make_unique<PaddedOp>(s, comm.collective(rs, "ReduceScatterv")));
    }
    return ops;
  }
  // Every block by Send/Recv (CheckOp then skips them all when every rank's input was in its line).
  addTransfers(comm, s, [](size_t) { return false; }, true, ops);
  return ops;
}

}  // namespace conflux
