// What the operations of one v-collective call share (vector_coll.h), and the check every rank
// runs on every rank's line: internal to vector_coll.cc and vector_mailbox_op.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/arith.h"
#include "context.h"
#include "engine.h"
#include "shm_layout.h"
#include "vector_coll.h"

namespace conflux {

// Input bytes per peer the line of the check across hosts has room for, at least (while the line
// fits a mailbox). Every byte of that line is gathered from every rank on every call, so room costs
// time, and input that does not fit travels by Send/Recv, one message per peer. AlltoAllv on the
// Intel Xeon VM, median us, lines of 1 KiB (before) against this rule (perf/RESULTS.md,
// 2026-11-29, third): 2 ranks 8 B 1.11 against 0.86, 256 B 1.08 against 0.76, 1 KiB 1.45 against
// 1.16; 3 ranks 504 B 3.29 against 2.75; 4 ranks 512 B 5.03 against 4.27. With 192 B of room in
// all, 252-512 B at 3 and 4 ranks went by Send/Recv: 4.1-8.8 us; with 192 B per peer, 504 B at 3
// ranks: 4.6-5.8 us.
constexpr size_t kLineDataBytesPerPeer = 256;

struct VectorCall {
  VectorCall(VectorArgs args, int nranks, int rank);

  VectorArgs a;
  int n = 0;
  int me = 0;
  size_t esize = 0;
  // The check on the latency path's mailboxes (one host, VectorLine::kMaxLineRanks ranks at most):
  // every rank's line is read where it was published, in the mailboxes of operation `seq` (set by
  // the check before it runs checkLines). Else (null) the check across hosts: an AllGather of
  // `line` into `lines`.
  const Context* ctx = nullptr;
  uint64_t seq = 0;
  // Across hosts: this rank's line of the check: header, then sendCounts, then recvCounts (2n + 1
  // words), then room for this rank's whole input when it is small (the blocks it sends, back to
  // back in rank order): at least kLineDataBytesPerPeer per peer, the line rounded up to whole cache
  // lines, and at most VectorLine::kLineBytes. Every rank's line after the AllGather.
  std::vector<uint64_t> line;
  std::vector<uint64_t> lines;
  bool agreed = false;
  // Across hosts: every rank's input travelled in the check; the blocks are read from `lines`, no
  // Send/Recv.
  bool inLines = false;
  std::vector<std::vector<std::byte>> received;  // ReduceScatterv: one block per peer
  // The padded path (paddedBlock): the block, in elements, and its buffers (AllGatherv: one of n
  // blocks, gathered in place; ReduceScatterv: n blocks in, one out).
  size_t pad = 0;
  std::shared_ptr<ScratchPool::Buffer> padIn, padOut;

  size_t countWords() const { return 2 * static_cast<size_t>(n) + 1; }
  size_t dataWords() const {
    const size_t room = kLineDataBytesPerPeer * static_cast<size_t>(std::max(1, n - 1));
    const size_t words = std::min(VectorLine::kLineBytes, roundUp(countWords() * 8 + room, size_t{64})) / 8;
    return words > countWords() ? words - countWords() : 0;
  }
  size_t width() const { return countWords() + dataWords(); }
  const uint64_t* lineOf(int r) const {
    return ctx != nullptr ? reinterpret_cast<const uint64_t*>(ctx->mailbox(r, seq).data) : &lines[r * width()];
  }
  uint64_t header(int r) const { return lineOf(r)[0]; }
  uint64_t sends(int r, int to) const { return lineOf(r)[1 + to]; }
  uint64_t expects(int r, int from) const { return lineOf(r)[1 + n + from]; }
  size_t sendTotal(int r) const {
    size_t total = 0;
    for (int to = 0; to < n; ++to) total += sends(r, to);
    return total;
  }
  // Across hosts, in the lines: rank r's block for rank `to`.
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
  // AlltoAllv and AllGatherv: this rank's own block, from its input to its output (ReduceScatterv
  // reduces it where it is; the padded path copies it with the others).
  void copyOwnBlock() const;
};

// The call's kind, datatype and op, as the first word of a line.
uint64_t headerOf(const VectorArgs& a);
// Every rank runs this on the same lines, so every rank finds the same first disagreement: throws
// Error(kInvalidUsage) naming it.
void checkLines(const VectorCall& s);

// On one host: the check on the latency path's mailboxes, which also moves the blocks the line
// carries (VectorLine) and copies this rank's own block (vector_mailbox_op.cc).
std::unique_ptr<Op> makeMailboxCheck(std::shared_ptr<VectorCall> s);
// The same check as a value on this thread (Engine::runQuick), recorded as `call`: false, with
// nothing run, when the engine is not idle. Else true, the outcome in `out` (or left with the
// progress thread for `stream`); `s` then moved to the heap if the check had to wait.
bool runQuickCheck(Engine& engine, VectorCall& s, const flight::Call& call, Stream* stream, Outcome& out);

}  // namespace conflux
