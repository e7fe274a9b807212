#include "vector_coll.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/arith.h"
#include "common/error.h"
#include "communicator.h"
#include "reduce/kernels.h"
#include "shm_layout.h"

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

// Input bytes per peer a check's line has room for, at least (while the line fits a mailbox).
// Every byte of the line is gathered from every rank on every call, so room costs time, and input
// that does not fit travels by Send/Recv, one message per peer. AlltoAllv on the Intel Xeon VM,
// median us, lines of 1 KiB (before) against this rule (perf/RESULTS.md, 2026-11-29, third):
// 2 ranks 8 B 1.11 against 0.86, 256 B 1.08 against 0.76, 1 KiB 1.45 against 1.16; 3 ranks 504 B
// 3.29 against 2.75; 4 ranks 512 B 5.03 against 4.27. With 192 B of room in all, 252-512 B at 3
// and 4 ranks went by Send/Recv: 4.1-8.8 us; with 192 B per peer, 504 B at 3 ranks: 4.6-5.8 us.
constexpr size_t kLineDataBytesPerPeer = 256;

// What the operations of one call share.
struct State {
  VectorArgs a;
  int n = 0;
  int me = 0;
  size_t esize = 0;
  // This rank's line of the check: header, then sendCounts, then recvCounts (2n + 1 words), then
  // room for this rank's whole input when it is small (the blocks it sends, back to back in rank
  // order): at least kLineDataBytesPerPeer per peer, the line rounded up to whole cache lines, and at most one
  // latency-path mailbox. Every rank's line after the AllGather.
  std::vector<uint64_t> line;
  std::vector<uint64_t> lines;
  bool agreed = false;
  // Every rank's input travelled in the check: the blocks are read from `lines`, no Send/Recv.
  bool inLines = false;
  std::vector<std::vector<std::byte>> received;  // ReduceScatterv: one block per peer
  // The padded path (paddedBlock): the block, in elements, and its buffers (AllGatherv: one of n
  // blocks, gathered in place; ReduceScatterv: n blocks in, one out).
  size_t pad = 0;
  std::shared_ptr<ScratchPool::Buffer> padIn, padOut;

  size_t countWords() const { return 2 * static_cast<size_t>(n) + 1; }
  size_t dataWords() const {
    const size_t room = kLineDataBytesPerPeer * static_cast<size_t>(std::max(1, n - 1));
    const size_t words = std::min(kMailboxBytes, roundUp(countWords() * 8 + room, size_t{64})) / 8;
    return words > countWords() ? words - countWords() : 0;
  }
  size_t width() const { return countWords() + dataWords(); }
  uint64_t header(int r) const { return lines[r * width()]; }
  uint64_t sends(int r, int to) const { return lines[r * width() + 1 + to]; }
  uint64_t expects(int r, int from) const { return lines[r * width() + 1 + n + from]; }
  size_t sendTotal(int r) const {
    size_t total = 0;
    for (int to = 0; to < n; ++to) total += sends(r, to);
    return total;
  }
  // In the lines: rank r's block for rank `to`.
  const std::byte* blockInLines(int r, int to) const {
    size_t before = 0;
    for (int j = 0; j < to; ++j) before += sends(r, j);
    return reinterpret_cast<const std::byte*>(&lines[r * width() + countWords()]) + before * esize;
  }
  const std::byte* sendPtr(int to) const {
    return static_cast<const std::byte*>(a.send) + a.sendDispls[to] * esize;
  }
  std::byte* recvPtr(int from) {
    if (a.kind == VectorKind::kReduceScatterv) return received[from].data();
    return static_cast<std::byte*>(a.recv) + a.recvDispls[from] * esize;
  }
};

uint64_t headerOf(const VectorArgs& a) {
  const uint64_t op = a.kind == VectorKind::kReduceScatterv ? static_cast<uint64_t>(a.op) + 1 : 0;
  return static_cast<uint64_t>(a.kind) | static_cast<uint64_t>(a.datatype) << 8 | op << 16;
}

std::string describeHeader(uint64_t h) {
  const auto kind = static_cast<VectorKind>(h & 0xff);
  const auto type = static_cast<cfxDataType_t>((h >> 8) & 0xff);
  std::string s = std::string(vectorKindName(kind)) + "(" + reduce::dataTypeName(type);
  if (const uint64_t op = (h >> 16) & 0xff; op != 0) s += std::string(", ") + reduce::redOpName(static_cast<cfxRedOp_t>(op - 1));
  return s + ")";
}

// Every rank runs this on the same lines, so every rank finds the same first disagreement.
void checkLines(const State& s) {
  for (int r = 1; r < s.n; ++r) {
    if (s.header(r) != s.header(0)) {
      throw Error(Status::kInvalidUsage, "collective mismatch: rank 0 called " + describeHeader(s.header(0)) +
                                             ", rank " + std::to_string(r) + " called " + describeHeader(s.header(r)));
    }
  }
  const char* name = vectorKindName(s.a.kind);
  for (int i = 0; i < s.n; ++i) {
    for (int j = 0; j < s.n; ++j) {
      const uint64_t sent = s.sends(i, j), expected = s.expects(j, i);
      if (sent == expected) continue;
      const std::string ri = "rank " + std::to_string(i), rj = "rank " + std::to_string(j);
      std::string what;
      switch (s.a.kind) {
        case VectorKind::kAlltoAllv:
          what = ri + " sends " + std::to_string(sent) + " elements to " + rj + " (sendcounts[" + std::to_string(j) +
                 "]), which expects " + std::to_string(expected) + " (recvcounts[" + std::to_string(i) + "])";
          break;
        case VectorKind::kAllGatherv:
          what = ri + " sends " + std::to_string(sent) + " elements (sendcount), " + rj + " expects " +
                 std::to_string(expected) + " from it (recvcounts[" + std::to_string(i) + "])";
          break;
        case VectorKind::kReduceScatterv:
          what = ri + " has recvcounts[" + std::to_string(j) + "] = " + std::to_string(sent) + ", " + rj +
                 " has recvcounts[" + std::to_string(j) + "] = " + std::to_string(expected);
          break;
      }
      throw Error(Status::kInvalidUsage, std::string(name) + " count mismatch: " + what);
    }
  }
}

// 1. The check: an AllGather of every rank's line, then the same verdict on every rank.
class CheckOp : public Op {
 public:
  CheckOp(std::shared_ptr<State> s, std::unique_ptr<Op> gather) : s_(std::move(s)), gather_(std::move(gather)) {
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
    State& s = *s_;
    s.inLines = true;
    for (int r = 0; r < s.n && s.inLines; ++r) s.inLines = s.sendTotal(r) * s.esize <= s.dataWords() * 8;
    if (s.inLines) {
      copyFromLines();
    } else {
      copyOwnBlock();
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
  void copyOwnBlock() {
    State& s = *s_;
    // The reduction reads it where it is; the padded path copies it out with the others.
    if (s.a.kind == VectorKind::kReduceScatterv || s.pad > 0) return;
    const size_t bytes = s.a.sendCounts[s.me] * s.esize;
    std::byte* to = s.recvPtr(s.me);
    const std::byte* from = s.sendPtr(s.me);
    if (bytes > 0 && to != from) std::memmove(to, from, bytes);
  }

  // This rank's input into its line, if it fits.
  void packInput() {
    State& s = *s_;
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
    State& s = *s_;
    if (s.a.kind == VectorKind::kReduceScatterv) return;
    for (int r = 0; r < s.n; ++r) {
      const size_t bytes = s.a.recvCounts[r] * s.esize;
      if (bytes > 0) std::memcpy(s.recvPtr(r), s.blockInLines(r, s.me), bytes);
    }
  }

  std::shared_ptr<State> s_;
  std::unique_ptr<Op> gather_;
  bool packed_ = false;
  bool done_ = false;
};

// 2. A Send or Recv of the call, held until the check has passed.
class HeldOp : public Op {
 public:
  HeldOp(std::shared_ptr<State> s, std::unique_ptr<Op> inner) : s_(std::move(s)), inner_(std::move(inner)) {
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
  std::shared_ptr<State> s_;
  std::unique_ptr<Op> inner_;
};

// 2'. The padded path: the hierarchical collective on padded blocks, held until the check has
// passed (paddedBlock guarantees the data did not travel in the check's lines).
class PaddedOp : public Op {
 public:
  PaddedOp(std::shared_ptr<State> s, std::unique_ptr<Op> inner) : s_(std::move(s)), inner_(std::move(inner)) {
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
    State& s = *s_;
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
    State& s = *s_;
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

  std::shared_ptr<State> s_;
  std::unique_ptr<Op> inner_;
  bool packed_ = false;
  bool done_ = false;
};

// 3. ReduceScatterv's reduction of this rank's block, once every block has arrived.
class ReduceReceivedOp : public Op {
 public:
  ReduceReceivedOp(std::shared_ptr<State> s, std::vector<const Op*> recvs) : s_(std::move(s)), recvs_(std::move(recvs)) {}
  bool progress(Context& /*ctx*/) override {
    if (done_ || !s_->agreed) return false;
    for (const Op* r : recvs_) {
      if (!r->done()) return false;
    }
    State& s = *s_;
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
  std::shared_ptr<State> s_;
  std::vector<const Op*> recvs_;
  bool done_ = false;
};

}  // namespace

size_t paddedBlock(const std::vector<size_t>& counts, size_t esize, int nhosts, double maxPadding, size_t lineBytes) {
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

std::vector<std::unique_ptr<Op>> makeVectorCollective(const Communicator& comm, VectorArgs args) {
  auto s = std::make_shared<State>();
  s->n = comm.size();
  s->me = comm.rank();
  s->esize = reduce::dataTypeSize(args.datatype);
  s->a = std::move(args);
  const int n = s->n, me = s->me;
  s->line.reserve(s->width());
  s->line.push_back(headerOf(s->a));
  for (int r = 0; r < n; ++r) s->line.push_back(s->a.sendCounts[r]);
  for (int r = 0; r < n; ++r) s->line.push_back(s->a.recvCounts[r]);
  s->line.resize(s->width(), 0);
  s->lines.resize(s->width() * n);
  if (s->a.kind == VectorKind::kReduceScatterv) {
    s->received.resize(n);
    for (int r = 0; r < n; ++r) {
      if (r != me) s->received[r].resize(s->a.recvCounts[r] * s->esize);
    }
  }

  std::vector<std::unique_ptr<Op>> ops;
  CollArgs gather{Coll::kAllGather, s->line.data(), s->lines.data(), s->width(), cfxUint64, cfxSum, -1};
  ops.push_back(std::make_unique<CheckOp>(s, comm.collective(gather, vectorKindName(s->a.kind))));
  // The counts every rank passes alike: AllGatherv's recvcounts, ReduceScatterv's recvcounts.
  const std::vector<size_t>& even = s->a.kind == VectorKind::kAllGatherv ? s->a.recvCounts : s->a.sendCounts;
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
  // Sends to the next ranks in ring order and receives from the previous ones, so that not every
  // rank starts with rank 0; they all progress together (one per peer and direction).
  std::vector<const Op*> recvs;
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n;
    const size_t bytes = s->a.sendCounts[to] * s->esize;
    if (bytes > 0) ops.push_back(std::make_unique<HeldOp>(s, comm.send(s->sendPtr(to), bytes, to, true)));
  }
  for (int k = 1; k < n; ++k) {
    const int from = (me - k + n) % n;
    const size_t bytes = s->a.recvCounts[from] * s->esize;
    if (bytes == 0) continue;
    ops.push_back(std::make_unique<HeldOp>(s, comm.recv(s->recvPtr(from), bytes, from)));
    recvs.push_back(ops.back().get());
  }
  if (s->a.kind == VectorKind::kReduceScatterv) ops.push_back(std::make_unique<ReduceReceivedOp>(s, std::move(recvs)));
  return ops;
}

}  // namespace conflux
