// AllReduce, Reduce and ReduceScatter: the reducing collectives.
#include <cstring>
#include <vector>

#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/staged.h"
#include "reduce/kernels.h"
#include "reduce/stream_out.h"

namespace conflux {

namespace {

// AllReduce and Reduce, as reduce-scatter then gather inside shared memory (rsag).
//   stage chunk p:     copy this rank's input chunk into its slot half, all but its own slice,
//                      which only this rank reads (straight from its input, below);
//   combine chunk p-1: reduce this rank's slice of the chunk, over all ranks' inputs in rank
//                      order (the peers' from their slots, its own in place), into the scratch
//                      half (so every rank's result is bitwise equal), then copy the slice on into
//                      the output while it is still in L1/L2;
//   finish chunk p-2:  copy the peers' reduced slices from scratch to the output.
// Outputs are the root's only for Reduce, written with the stores this rank chose for large
// messages (ops/copy.h). Copying the own slice in the combine rather than the finish moves the
// same bytes but reads them from cache: 2-rank AllReduce of 16-256 MiB ran 4-12% faster on the
// Intel Xeon VM while it was quiet, and the same once memory was busier (perf/RESULTS.md,
// 2026-11-29). The hand-offs (the slot halves and the scratch slices the peers read) take the
// stores this rank chose for them (ops/handoff_stores.h); with streaming stores the combine writes
// its slice into the scratch and the output in one pass (reduce/stream_out.h).
class AllReduceOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    srcs_.resize(ctx.size());
    pickHandoffStores(ctx, bytes(a_.count));
    return planChunks(ctx, ctx.halfBytes() / esize_, 3);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size();
    size_t k;
    const int me = ctx.rank();
    const bool receives = a_.coll == Coll::kAllReduce || ctx.rank() == a_.root;
    if (stage(phase, 0, k)) {
      size_t lo, hi;
      sliceOf(chunkLen(k), me, n, lo, hi);
      std::byte* slot = ctx.slotHalf(me, chunkId(k));
      const std::byte* in = send + chunkOffset(k);
      copyOut(slot, in, bytes(lo), streamHandoffs_);
      copyOut(slot + bytes(hi), in + bytes(hi), bytes(chunkLen(k) - hi), streamHandoffs_);
    }
    if (stage(phase, 1, k)) {
      size_t lo, hi;
      sliceOf(chunkLen(k), me, n, lo, hi);
      if (hi > lo) {
        for (int r = 0; r < n; ++r) srcs_[r] = (r == me ? send + chunkOffset(k) : ctx.slotHalf(r, chunkId(k))) + bytes(lo);
        combine(ctx, ctx.scratchHalf(chunkId(k)) + bytes(lo), receives ? recv + chunkOffset(k) + bytes(lo) : nullptr,
                hi - lo);
      }
    }
    if (receives && stage(phase, 2, k)) {
      size_t lo, hi;
      sliceOf(chunkLen(k), me, n, lo, hi);
      std::byte* out = recv + chunkOffset(k);
      const std::byte* reduced = ctx.scratchHalf(chunkId(k));
      ctx.stores().copy(out, reduced, bytes(lo), bytes(a_.count), seq());
      ctx.stores().copy(out + bytes(hi), reduced + bytes(hi), bytes(chunkLen(k) - hi), bytes(a_.count), seq());
    }
  }

 private:
  // Reduces `len` elements of srcs_ into the scratch `slice` and, unless null, this rank's `out`.
  void combine(Context& ctx, std::byte* slice, std::byte* out, size_t len) {
    const int n = ctx.size();
    void* outs[2] = {slice, out};
    bool reduced = false;
    if (streamHandoffs_) {
      if (out != nullptr && reduce::reduceStreamed(outs, 2, srcs_.data(), n, len, a_.datatype, a_.op, n)) return;
      reduced = reduce::reduceStreamed(outs, 1, srcs_.data(), n, len, a_.datatype, a_.op, n);
    }
    if (!reduced) reduce::reduce(slice, srcs_.data(), n, len, a_.datatype, a_.op, n);
    if (out != nullptr) ctx.stores().copy(out, slice, bytes(len), bytes(a_.count), seq());
  }

  std::vector<const void*> srcs_;
};

// AllReduce and Reduce, direct: every rank reduces everything.
//   stage chunk p:     copy this rank's input chunk into its slot half (not Reduce's root out of
//                      place, whose input only it reads: 2-rank Reduce of 16 KiB 2.32 -> 2.03 us);
//   combine chunk p-1: reduce the chunk over all ranks' slot halves, in rank order, straight into
//                      this rank's output (the root's only, for Reduce).
// Every rank runs the same kernel over the same inputs in the same order, so all get the same
// bits.
class DirectAllReduceOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    srcs_.resize(ctx.size());
    return planChunks(ctx, ctx.halfBytes() / esize_, 2);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    const int n = ctx.size();
    size_t k;
    // Reduce's root out of place reads its own input where it lies: no other rank reads it.
    const bool readOwnInput = a_.coll == Coll::kReduce && ctx.rank() == a_.root && a_.send != a_.recv;
    if (!readOwnInput && stage(phase, 0, k)) std::memcpy(ctx.slotHalf(ctx.rank(), chunkId(k)), send + chunkOffset(k), bytes(chunkLen(k)));
    bool receives = a_.coll == Coll::kAllReduce || ctx.rank() == a_.root;
    if (receives && stage(phase, 1, k)) {
      for (int r = 0; r < n; ++r) srcs_[r] = ctx.slotHalf(r, chunkId(k));
      if (readOwnInput) srcs_[ctx.rank()] = send + chunkOffset(k);
      reduce::reduce(static_cast<std::byte*>(a_.recv) + chunkOffset(k), srcs_.data(), n, chunkLen(k), a_.datatype,
                     a_.op, n);
    }
  }

 private:
  std::vector<const void*> srcs_;
};

// ReduceScatter: each chunk carries the same element range of all n blocks.
//   stage chunk p:     copy range p of every block of this rank's input into its slot half (with
//                      the hand-off stores this rank chose, ops/handoff_stores.h), but its own
//                      block, which only this rank reads (in place, below), unless the output is
//                      that block (in place: the kernel's output may not alias an input);
//   combine chunk p-1: reduce block `rank` of every rank's input, in rank order, straight into
//                      this rank's output (the peers' blocks from their slot halves).
class ReduceScatterOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    srcs_.resize(ctx.size());
    pickHandoffStores(ctx, bytes(a_.count) * ctx.size());
    return planChunks(ctx, ctx.halfBytes() / (esize_ * ctx.size()), 2);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size();
    size_t k;
    const int me = ctx.rank();
    const std::byte* ownBlock = send + bytes(me * a_.count);
    const bool ownInPlace = recv != ownBlock;  // read this rank's own block where it is
    if (stage(phase, 0, k)) {
      std::byte* slot = ctx.slotHalf(me, chunkId(k));
      const size_t l = chunkLen(k);
      for (int b = 0; b < n; ++b) {
        if (b == me && ownInPlace) continue;
        copyOut(slot + bytes(b * l), send + bytes(b * a_.count) + chunkOffset(k), bytes(l), streamHandoffs_);
      }
    }
    if (stage(phase, 1, k)) {
      const size_t l = chunkLen(k);
      for (int r = 0; r < n; ++r) srcs_[r] = ctx.slotHalf(r, chunkId(k)) + bytes(me * l);
      if (ownInPlace) srcs_[me] = ownBlock + chunkOffset(k);
      reduce::reduce(recv + chunkOffset(k), srcs_.data(), n, l, a_.datatype, a_.op, n);
    }
  }

 private:
  std::vector<const void*> srcs_;
};

}  // namespace

std::unique_ptr<Op> makeStagedReduceScatter(const CollArgs& a) { return std::make_unique<ReduceScatterOp>(a); }
std::unique_ptr<Op> makeDirectAllReduce(const CollArgs& a) { return std::make_unique<DirectAllReduceOp>(a); }
std::unique_ptr<Op> makeRsagAllReduce(const CollArgs& a) { return std::make_unique<AllReduceOp>(a); }

}  // namespace conflux
