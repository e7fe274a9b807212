#include "ops/zero_copy.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/arith.h"
#include "ops/collective.h"
#include "ops/copy.h"
#include "reduce/kernels.h"
#include "reduce/stream_out.h"

namespace conflux {

namespace {

bool registered(const Context& ctx, int r, uint64_t seq, bool recv) { return ctx.registered().isRegistered(r, seq, recv); }

bool allRegistered(const Context& ctx, uint64_t seq, bool recv) {
  for (int r = 0; r < ctx.size(); ++r) {
    if (!registered(ctx, r, seq, recv)) return false;
  }
  return true;
}

bool overlaps(const std::byte* a, const std::byte* b, size_t bytes) {
  return a < b + bytes && b < a + bytes;
}

// AllReduce and Reduce: this rank's slice of the message, from every input into the outputs, in
// spans of kZeroCopyBlockBytes, each written one of two ways:
//   ordinary stores:  in blocks of kZeroCopyDirectBlockBytes, each reduced straight into one
//                     output (this rank's own for AllReduce, the root's for Reduce; scratch when
//                     that output is also an input, in place) and copied from there, still in L1,
//                     into the others: inputs read and outputs written as one stream;
//   streaming stores: reduced tile by tile (a few lines, in L1) and each tile streamed into every
//                     output (reduce::reduceStreamed), so no output is read for ownership and the
//                     reads and the streaming stores interleave finely; through 64 KiB of scratch
//                     when the outputs' alignments differ.
// On the Intel VM (streaming stores slow) the first ran 1.15-1.2x faster than streaming through
// 64 KiB of scratch; on the 16-core host (streaming stores fast) streaming was faster
// (perf/RESULTS.md, 2026-11-27), and on the AMD EPYC VM streamed tiles made 2-rank AllReduce
// 1.2-1.4x faster than 64 KiB through scratch (2026-11-28 (fourth)). For
// messages of kStreamingMinBytes or more the rank's zero-copy store chooser picks one, timing whole
// spans of both kinds in its first large messages after the first (ops/copy.h). Smaller messages,
// and calls in place on every rank (each output block an input block just read, in cache: ordinary
// stores were 1.5x faster there on the 16-core host), use ordinary stores.
class SliceReducer {
 public:
  SliceReducer(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* scratch)
      : ctx_(ctx),
        a_(a),
        seq_(seq),
        n_(ctx.size()),
        es_(reduce::dataTypeSize(a.datatype)),
        scratch_(scratch),
        in_(n_),
        srcs_(n_) {
    const int me = ctx.rank();
    for (int r = 0; r < n_; ++r) {
      in_[r] = r == me ? static_cast<const std::byte*>(a.send) : ctx.registered().peerBuffer(r, seq, false);
    }
    for (int k = 0; k < n_; ++k) {  // this rank's own output first: the one reduced into
      const int r = (me + k) % n_;
      if (a.coll == Coll::kReduce && r != a.root) continue;
      out_.push_back(r == me ? static_cast<std::byte*>(a.recv) : ctx.registered().peerBuffer(r, seq, true));
    }
    dsts_.resize(out_.size());
    // Over the whole message: this rank may also reduce spans of its peers' slices (run()).
    intoOutput_ = true;
    for (int r = 0; r < n_; ++r) {
      if (overlaps(out_[0], in_[r], a.count * es_)) intoOutput_ = false;
    }
    // In place on every rank that receives: each output block is an input block just read, in
    // cache, so ordinary stores write it without a trip to memory.
    inPlace_ = true;
    for (size_t k = 0; k < out_.size(); ++k) {
      const int r = a.coll == Coll::kReduce ? a.root : (me + static_cast<int>(k)) % n_;
      if (out_[k] != in_[r]) inPlace_ = false;
    }
  }

  // This rank's own slice first, span by span, then the spans of its peers' slices that they have
  // not claimed yet: a rank whose core was taken away for a while no longer holds every rank back
  // at the closing barrier. A span's bits do not depend on which rank reduces it.
  void run(StoreChooser& stores) {
    const size_t span = kZeroCopyBlockBytes / es_;
    const bool large = a_.count * es_ >= kStreamingMinBytes && !inPlace_;
    for (int k = 0; k < n_; ++k) {
      const int owner = (ctx_.rank() + k) % n_;
      size_t lo, hi;
      sliceOf(a_.count, es_, owner, n_, lo, hi);
      const uint64_t spans = ceilDiv(hi - lo, span);
      std::atomic<uint64_t>& claimed = ctx_.registered().spansClaimed(owner, seq_);
      if (k > 0 && claimed.load(std::memory_order_relaxed) >= spans) continue;  // leave its line alone
      for (uint64_t s; (s = claimed.fetch_add(1, std::memory_order_relaxed)) < spans;) {
        const size_t b = lo + s * span, len = std::min(span, hi - b);
        if (large) {
          // Counted as the bytes written, so the trial ends as soon on 8 ranks as on 2.
          stores.run(len * es_ * out_.size(), a_.count * es_,
                     [&](bool streaming) { streaming ? streamed(b, len) : direct(b, len); });
        } else {
          direct(b, len);
        }
      }
    }
    if (large) stores.warmedUp();  // the first large message mapped the pages it touched
  }

 private:
  // srcs_: every input at element b.
  void pointAt(size_t b) {
    for (int r = 0; r < n_; ++r) srcs_[r] = in_[r] + b * es_;
  }
  void reduceInto(std::byte* dst, size_t b, size_t len) {
    pointAt(b);
    reduce::reduce(dst, srcs_.data(), n_, len, a_.datatype, a_.op, n_);
  }
  void direct(size_t from, size_t len) {
    const size_t per = kZeroCopyDirectBlockBytes / es_;
    for (size_t b = from; b < from + len; b += per) {
      const size_t m = std::min(per, from + len - b);
      std::byte* block = intoOutput_ ? out_[0] + b * es_ : scratch_;
      reduceInto(block, b, m);
      for (std::byte* o : out_) {
        if (o + b * es_ != block) std::memcpy(o + b * es_, block, m * es_);
      }
    }
  }
  void streamed(size_t b, size_t len) {
    pointAt(b);
    for (size_t k = 0; k < out_.size(); ++k) dsts_[k] = out_[k] + b * es_;
    if (reduce::reduceStreamed(dsts_.data(), static_cast<int>(dsts_.size()), srcs_.data(), n_, len, a_.datatype,
                               a_.op, n_)) {
      return;
    }
    reduceInto(scratch_, b, len);
    for (std::byte* o : out_) copyOut(o + b * es_, scratch_, len * es_, true);
  }

  Context& ctx_;
  const CollArgs& a_;
  const uint64_t seq_;
  const int n_;
  const size_t es_;
  std::byte* scratch_;
  std::vector<const std::byte*> in_;
  std::vector<std::byte*> out_;
  std::vector<const void*> srcs_;
  std::vector<void*> dsts_;
  bool intoOutput_ = true;
  bool inPlace_ = false;
};

// ReduceScatter: each rank's block of every input, reduced into that rank's output (through the
// scratch block when the output is one of the inputs: in place, the rank's own input block). Spans
// of a block are claimed one by one; when every rank's output is registered too, a rank done with
// its own block takes the spans its peers have not claimed (their outputs mapped here). Large
// messages may stream into the output (reduce::reduceStreamed), as the stores chooser says.
void reduceBlocks(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* scratch) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t es = reduce::dataTypeSize(a.datatype), blockBytes = a.count * es;
  const bool large = blockBytes * n >= kStreamingMinBytes;  // the message: every block
  const int owners = allRegistered(ctx, seq, true) ? n : 1;
  const size_t per = kZeroCopyBlockBytes / es;
  const uint64_t spans = ceilDiv(a.count, per);
  std::vector<const std::byte*> in(n);
  std::vector<const void*> srcs(n);
  bool timed = false;
  for (int k = 0; k < owners; ++k) {
    const int o = (me + k) % n;
    std::atomic<uint64_t>& claimed = ctx.registered().spansClaimed(o, seq);
    if (k > 0 && claimed.load(std::memory_order_relaxed) >= spans) continue;  // leave its line alone
    for (int r = 0; r < n; ++r) {
      in[r] = (r == me ? static_cast<const std::byte*>(a.send) : ctx.registered().peerBuffer(r, seq, false)) + o * blockBytes;
    }
    std::byte* recv = o == me ? static_cast<std::byte*>(a.recv) : ctx.registered().peerBuffer(o, seq, true);
    bool aliased = false;
    for (int r = 0; r < n; ++r) aliased = aliased || overlaps(recv, in[r], blockBytes);
    for (uint64_t s; (s = claimed.fetch_add(1, std::memory_order_relaxed)) < spans;) {
      const size_t b = s * per, len = std::min(per, a.count - b);
      for (int r = 0; r < n; ++r) srcs[r] = in[r] + b * es;
      void* out = recv + b * es;
      auto ordinary = [&] {
        if (aliased) {
          reduce::reduce(scratch, srcs.data(), n, len, a.datatype, a.op, n);
          std::memcpy(out, scratch, len * es);
        } else {
          reduce::reduce(out, srcs.data(), n, len, a.datatype, a.op, n);
        }
      };
      if (!large || aliased) {
        ordinary();
        continue;
      }
      timed = true;
      ctx.zeroCopyStores().run(len * es, blockBytes * n, [&](bool streaming) {
        if (!streaming || !reduce::reduceStreamed(&out, 1, srcs.data(), n, len, a.datatype, a.op, n)) ordinary();
      });
    }
  }
  if (timed) ctx.zeroCopyStores().warmedUp();
}

void gather(Context& ctx, const CollArgs& a, uint64_t seq) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  auto* recv = static_cast<std::byte*>(a.recv);
  const size_t message = bytes * n;
  for (int k = 0; k < n; ++k) {
    const int r = (me + k) % n;
    const void* src = r == me ? a.send : ctx.registered().peerBuffer(r, seq, false);
    if (src != recv + r * bytes) ctx.stores().copy(recv + r * bytes, src, bytes, message, seq);
  }
}

void broadcast(Context& ctx, const CollArgs& a, uint64_t seq) {
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  const void* src = ctx.rank() == a.root ? a.send : ctx.registered().peerBuffer(a.root, seq, false);
  if (src != a.recv) ctx.stores().copy(a.recv, src, bytes, bytes, seq);
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
    case Coll::kReduce: SliceReducer(ctx, a, seq, block).run(ctx.zeroCopyStores()); break;
    case Coll::kReduceScatter: reduceBlocks(ctx, a, seq, block); break;
    case Coll::kAllGather: gather(ctx, a, seq); break;
    case Coll::kBroadcast: broadcast(ctx, a, seq); break;
    default: break;
  }
}

}  // namespace conflux
