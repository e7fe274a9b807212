// AllReduce, Reduce and ReduceScatter: the reducing collectives.
#include <cstring>
#include <vector>

#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/tuning.h"
#include "reduce/kernels.h"

namespace conflux {

namespace {

// AllReduce and Reduce, as reduce-scatter then gather inside shared memory.
//   stage chunk p:    copy this rank's input chunk into its slot half;
//   combine chunk p-1: reduce this rank's slice of the chunk, over all ranks' slots in rank
//                      order, into the scratch half (so every rank's result is bitwise equal);
//   finish chunk p-2: copy the whole reduced chunk from scratch to the output (root only for
//                      Reduce).
class AllReduceOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    streaming_ = bytes(a_.count) >= kStreamingMinBytes;
    chunkElems_ = ctx.halfBytes() / esize_;
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
    srcs_.resize(ctx.size());
    return static_cast<int>(nchunks_ + 2);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size();
    if (size_t k = phase; k < nchunks_) {
      std::memcpy(ctx.slotHalf(ctx.rank(), firstChunk_ + k), send + bytes(k * chunkElems_), bytes(len(k)));
    }
    if (phase >= 1 && size_t(phase - 1) < nchunks_) {
      size_t k = phase - 1, lo, hi;
      sliceOf(len(k), ctx.rank(), n, lo, hi);
      if (hi > lo) {
        for (int r = 0; r < n; ++r) srcs_[r] = ctx.slotHalf(r, firstChunk_ + k) + bytes(lo);
        reduce::reduce(ctx.scratchHalf(firstChunk_ + k) + bytes(lo), srcs_.data(), n, hi - lo, a_.datatype, a_.op, n);
      }
    }
    bool receives = a_.coll == Coll::kAllReduce || ctx.rank() == a_.root;
    if (receives && phase >= 2 && size_t(phase - 2) < nchunks_) {
      size_t k = phase - 2;
      copyOut(recv + bytes(k * chunkElems_), ctx.scratchHalf(firstChunk_ + k), bytes(len(k)), streaming_);
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
  bool streaming_ = false;
  std::vector<const void*> srcs_;
};

// AllReduce and Reduce, direct: every rank reduces everything.
//   stage chunk p:     copy this rank's input chunk into its slot half;
//   combine chunk p-1: reduce the chunk over all ranks' slot halves, in rank order, straight into
//                      this rank's output (the root's only, for Reduce).
// Every rank runs the same kernel over the same inputs in the same order, so all get the same
// bits.
class DirectAllReduceOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    chunkElems_ = ctx.halfBytes() / esize_;
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
    srcs_.resize(ctx.size());
    return static_cast<int>(nchunks_ + 1);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    const int n = ctx.size();
    if (size_t k = phase; k < nchunks_) {
      std::memcpy(ctx.slotHalf(ctx.rank(), firstChunk_ + k), send + bytes(k * chunkElems_), bytes(len(k)));
    }
    bool receives = a_.coll == Coll::kAllReduce || ctx.rank() == a_.root;
    if (receives && phase >= 1 && size_t(phase - 1) < nchunks_) {
      size_t k = phase - 1;
      for (int r = 0; r < n; ++r) srcs_[r] = ctx.slotHalf(r, firstChunk_ + k);
      reduce::reduce(static_cast<std::byte*>(a_.recv) + bytes(k * chunkElems_), srcs_.data(), n, len(k),
                     a_.datatype, a_.op, n);
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
  std::vector<const void*> srcs_;
};

// ReduceScatter: each chunk carries the same element range of all n blocks.
//   stage chunk p:     copy range p of every block of this rank's input into its slot half;
//   combine chunk p-1: reduce block `rank` of every rank's slot half, in rank order, straight
//                      into this rank's output.
class ReduceScatterOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    chunkElems_ = ctx.halfBytes() / (esize_ * ctx.size());
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
    srcs_.resize(ctx.size());
    return static_cast<int>(nchunks_ + 1);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size();
    if (size_t k = phase; k < nchunks_) {
      std::byte* slot = ctx.slotHalf(ctx.rank(), firstChunk_ + k);
      size_t l = len(k);
      for (int b = 0; b < n; ++b) {
        std::memcpy(slot + bytes(b * l), send + bytes(b * a_.count + k * chunkElems_), bytes(l));
      }
    }
    if (phase >= 1 && size_t(phase - 1) < nchunks_) {
      size_t k = phase - 1, l = len(k);
      for (int r = 0; r < n; ++r) srcs_[r] = ctx.slotHalf(r, firstChunk_ + k) + bytes(ctx.rank() * l);
      reduce::reduce(recv + bytes(k * chunkElems_), srcs_.data(), n, l, a_.datatype, a_.op, n);
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
  std::vector<const void*> srcs_;
};

}  // namespace

std::unique_ptr<Op> makeReducingCollective(const CollArgs& a, const Tuning& tuning, int nranks) {
  if (a.coll == Coll::kReduceScatter) return std::make_unique<ReduceScatterOp>(a);
  if (tuning.choose(a.count * reduce::dataTypeSize(a.datatype), nranks) == Algo::kDirect) {
    return std::make_unique<DirectAllReduceOp>(a);
  }
  return std::make_unique<AllReduceOp>(a);
}

}  // namespace conflux
