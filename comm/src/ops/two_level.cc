// AllReduce and Reduce on a host with several NUMA domains, hfreduce's way: reduce inside each
// domain first, then across domains, so each rank's input is read once by its own domain and only
// one partial per domain crosses the socket interconnect (topology/plan.h decides the domains;
// shm_layout.h holds one partial area per domain, placed on that domain's node).
#include <vector>

#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/staged.h"
#include "ops/tuning.h"
#include "reduce/kernels.h"
#include "reduce/stream_out.h"

namespace conflux {

namespace {

// A four-stage pipeline over chunks; halves alternate with the chunk number as in every phased
// collective, and one barrier separates consecutive phases.
//   stage chunk p:          copy this rank's input chunk into its slot half;
//   domain-reduce p-1:      the ranks of domain d split the chunk; each reduces its slice over the
//                           domain's slots, in rank order, into domain d's partial half (Avg
//                           sums here and divides once, below);
//   cross-reduce p-2:       all ranks split the chunk; each reduces its slice over the domain
//                           partials, in domain order, into the scratch half;
//   finish p-3:             copy the whole chunk from scratch to the output (root only for Reduce).
// Every rank reads the same scratch, so all get the same bits; the summation order (domains in
// node order, ranks in rank order inside a domain) is fixed, so runs repeat bitwise. The hand-offs
// (the slot halves, the domain partials and the scratch slices, which other ranks read next) take
// the stores this rank chose for them, as rsag's do (ops/handoff_stores.h); either kind writes the
// same bits.
class TwoLevelAllReduceOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    domain_ = ctx.domainOf(ctx.rank());
    const auto& mates = ctx.domainRanks(domain_);
    for (size_t i = 0; i < mates.size(); ++i) {
      if (mates[i] == ctx.rank()) position_ = static_cast<int>(i);
    }
    srcs_.resize(std::max<size_t>(ctx.size(), ctx.domains()));
    pickHandoffStores(ctx, bytes(a_.count));
    return planChunks(ctx, ctx.halfBytes() / esize_, 4);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    size_t k, lo, hi;
    if (stage(phase, 0, k)) copyOut(ctx.slotHalf(ctx.rank(), chunkId(k)), send + chunkOffset(k), bytes(chunkLen(k)), streamHandoffs_);
    if (stage(phase, 1, k)) {
      const auto& mates = ctx.domainRanks(domain_);
      const int m = static_cast<int>(mates.size());
      sliceOf(chunkLen(k), position_, m, lo, hi);
      if (hi > lo) {
        for (int i = 0; i < m; ++i) srcs_[i] = ctx.slotHalf(mates[i], chunkId(k)) + bytes(lo);
        handOff(ctx.domainHalf(domain_, chunkId(k)) + bytes(lo), m, hi - lo, reduce::partialOp(a_.op), 1);
      }
    }
    if (stage(phase, 2, k)) {
      sliceOf(chunkLen(k), ctx.rank(), ctx.size(), lo, hi);
      if (hi > lo) {
        for (int d = 0; d < ctx.domains(); ++d) srcs_[d] = ctx.domainHalf(d, chunkId(k)) + bytes(lo);
        handOff(ctx.scratchHalf(chunkId(k)) + bytes(lo), ctx.domains(), hi - lo, a_.op, ctx.size());
      }
    }
    bool receives = a_.coll == Coll::kAllReduce || ctx.rank() == a_.root;
    if (receives && stage(phase, 3, k)) {
      ctx.stores().copy(recv + chunkOffset(k), ctx.scratchHalf(chunkId(k)), bytes(chunkLen(k)), bytes(a_.count), seq());
    }
  }

 private:
  // Reduces `len` elements of srcs_[0..nsrc) into `dst`, a hand-off other ranks read next.
  void handOff(std::byte* dst, int nsrc, size_t len, cfxRedOp_t op, int divisor) {
    void* outs[1] = {dst};
    if (streamHandoffs_ && reduce::reduceStreamed(outs, 1, srcs_.data(), nsrc, len, a_.datatype, op, divisor)) return;
    reduce::reduce(dst, srcs_.data(), nsrc, len, a_.datatype, op, divisor);
  }

  int domain_ = 0;
  int position_ = 0;
  std::vector<const void*> srcs_;
};

}  // namespace

std::unique_ptr<Op> makeTwoLevelAllReduce(const CollArgs& a) { return std::make_unique<TwoLevelAllReduceOp>(a); }

}  // namespace conflux
