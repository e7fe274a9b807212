#include "ops/zero_copy.h"

#include <algorithm>
#include <cstring>

#include "ops/collective.h"
#include "ops/copy.h"
#include "reduce/kernels.h"

namespace conflux {

namespace {

bool registered(const Context& ctx, int r, uint64_t seq, bool recv) { return ctx.isRegistered(r, seq, recv); }

bool allRegistered(const Context& ctx, uint64_t seq, bool recv) {
  for (int r = 0; r < ctx.size(); ++r) {
    if (!registered(ctx, r, seq, recv)) return false;
  }
  return true;
}

// AllReduce and Reduce: this rank's slice, block by block, from every input into the outputs.
void reduceSlice(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* block) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t es = reduce::dataTypeSize(a.datatype);
  std::vector<const std::byte*> in(n);
  std::vector<std::byte*> out;
  for (int r = 0; r < n; ++r) {
    in[r] = r == me ? static_cast<const std::byte*>(a.send) : ctx.registeredBuffer(r, seq, false);
  }
  for (int k = 1; k <= n; ++k) {  // this rank's own output last: the peers' writes go first
    const int r = (me + k) % n;
    if (a.coll == Coll::kReduce && r != a.root) continue;
    out.push_back(r == me ? static_cast<std::byte*>(a.recv) : ctx.registeredBuffer(r, seq, true));
  }
  size_t lo, hi;
  sliceOf(a.count, es, me, n, lo, hi);
  const size_t per = kZeroCopyBlockBytes / es;
  const size_t message = a.count * es;
  std::vector<const void*> srcs(n);
  for (size_t b = lo; b < hi; b += per) {
    const size_t len = std::min(per, hi - b);
    for (int r = 0; r < n; ++r) srcs[r] = in[r] + b * es;
    reduce::reduce(block, srcs.data(), n, len, a.datatype, a.op, n);
    for (std::byte* o : out) ctx.stores().copy(o + b * es, block, len * es, message);
  }
}

// ReduceScatter: this rank's block of every input, reduced into its output (through the scratch
// block when the output is this rank's own input block, reduced in place).
void reduceOwnBlock(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* block) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t es = reduce::dataTypeSize(a.datatype);
  const size_t own = static_cast<size_t>(me) * a.count * es;
  std::vector<const std::byte*> in(n);
  for (int r = 0; r < n; ++r) {
    in[r] = (r == me ? static_cast<const std::byte*>(a.send) : ctx.registeredBuffer(r, seq, false)) + own;
  }
  auto* recv = static_cast<std::byte*>(a.recv);
  const bool inPlace = recv == in[me];
  const size_t per = kZeroCopyBlockBytes / es;
  std::vector<const void*> srcs(n);
  for (size_t b = 0; b < a.count; b += per) {
    const size_t len = std::min(per, a.count - b);
    for (int r = 0; r < n; ++r) srcs[r] = in[r] + b * es;
    if (inPlace) {
      reduce::reduce(block, srcs.data(), n, len, a.datatype, a.op, n);
      std::memcpy(recv + b * es, block, len * es);
    } else {
      reduce::reduce(recv + b * es, srcs.data(), n, len, a.datatype, a.op, n);
    }
  }
}

void gather(Context& ctx, const CollArgs& a, uint64_t seq) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  auto* recv = static_cast<std::byte*>(a.recv);
  const size_t message = bytes * n;
  for (int k = 0; k < n; ++k) {
    const int r = (me + k) % n;
    const void* src = r == me ? a.send : ctx.registeredBuffer(r, seq, false);
    if (src != recv + r * bytes) ctx.stores().copy(recv + r * bytes, src, bytes, message);
  }
}

void broadcast(Context& ctx, const CollArgs& a, uint64_t seq) {
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  const void* src = ctx.rank() == a.root ? a.send : ctx.registeredBuffer(a.root, seq, false);
  if (src != a.recv) ctx.stores().copy(a.recv, src, bytes, bytes);
}

}  // namespace

bool hasZeroCopy(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter || c == Coll::kAllGather ||
         c == Coll::kBroadcast;
}

void bufferBytes(const CollArgs& a, int rank, int nranks, size_t& send, size_t& recv) {
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  send = recv = bytes;
  switch (a.coll) {
    case Coll::kReduceScatter: send = bytes * nranks; break;
    case Coll::kAllGather: recv = bytes * nranks; break;
    case Coll::kAlltoAll: send = recv = bytes * nranks; break;
    case Coll::kReduce: if (rank != a.root) recv = 0; break;
    case Coll::kBroadcast: if (rank != a.root) send = 0; break;
    default: break;
  }
}

bool zeroCopyReady(const Context& ctx, const CollArgs& a, uint64_t seq) {
  // Every rank reads the same published table, so all get the same answer (a rank's own buffers
  // count too, though only its peers reach them through the table).
  switch (a.coll) {
    case Coll::kAllReduce: return allRegistered(ctx, seq, false) && allRegistered(ctx, seq, true);
    case Coll::kReduce: return allRegistered(ctx, seq, false) && registered(ctx, a.root, seq, true);
    case Coll::kReduceScatter:
    case Coll::kAllGather: return allRegistered(ctx, seq, false);
    case Coll::kBroadcast: return registered(ctx, a.root, seq, false);
    default: return false;
  }
}

void runZeroCopy(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* block) {
  switch (a.coll) {
    case Coll::kAllReduce:
    case Coll::kReduce: reduceSlice(ctx, a, seq, block); break;
    case Coll::kReduceScatter: reduceOwnBlock(ctx, a, seq, block); break;
    case Coll::kAllGather: gather(ctx, a, seq); break;
    case Coll::kBroadcast: broadcast(ctx, a, seq); break;
    default: break;
  }
}

}  // namespace conflux
