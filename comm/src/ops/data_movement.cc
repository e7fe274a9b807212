// Broadcast, AllGather and AlltoAll: the collectives that move data without reducing it.
#include <algorithm>
#include <cstring>

#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/staged.h"

namespace conflux {

namespace {

// Broadcast: the root stages chunk p in its slot half while every other rank copies chunk p-1
// out of the root's other half (and the root copies chunk p-1 into its own output: after the first
// barrier, so a call that turns out mismatched leaves every output as it was).
class BroadcastOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override { return planChunks(ctx, ctx.halfBytes() / esize_, 2); }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const bool root = ctx.rank() == a_.root;
    size_t k;
    if (root && stage(phase, 0, k)) {
      ctx.stores().copyToSlot(ctx.slotHalf(a_.root, chunkId(k)), send + chunkOffset(k), bytes(chunkLen(k)),
                              bytes(a_.count));
    }
    if (root && send != recv && stage(phase, 1, k)) {
      std::memcpy(recv + chunkOffset(k), send + chunkOffset(k), bytes(chunkLen(k)));
    }
    if (!root && stage(phase, 1, k)) {
      ctx.stores().copy(recv + chunkOffset(k), ctx.slotHalf(a_.root, chunkId(k)), bytes(chunkLen(k)), bytes(a_.count),
                        seq());
    }
  }
};

// AllGather: every rank stages chunk p of its input, then copies chunk p-1 of every rank's
// slot into that rank's block of the output.
class AllGatherOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override { return planChunks(ctx, ctx.halfBytes() / esize_, 2); }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    size_t k;
    if (stage(phase, 0, k)) {
      ctx.stores().copyToSlot(ctx.slotHalf(ctx.rank(), chunkId(k)), send + chunkOffset(k), bytes(chunkLen(k)),
                              bytes(a_.count));
    }
    if (stage(phase, 1, k)) {
      const size_t message = bytes(a_.count) * ctx.size();
      for (int r = 0; r < ctx.size(); ++r) {
        ctx.stores().copy(recv + bytes(r * a_.count) + chunkOffset(k), ctx.slotHalf(r, chunkId(k)), bytes(chunkLen(k)),
                          message, seq());
      }
    }
  }
};

// AlltoAll: like ReduceScatter's staging (range p of every outgoing block but the rank's own), then
// each rank copies its block out of every peer's slot half, and its own block from its input
// (4-rank alltoall_perf on 2 CPUs, 1-16 MiB: 8-18% less time, perf/RESULTS.md 2026-11-29 (seventh)).
class AlltoAllOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override { return planChunks(ctx, ctx.halfBytes() / (esize_ * ctx.size()), 2); }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size();
    size_t k;
    const int me = ctx.rank();
    if (stage(phase, 0, k)) {
      std::byte* slot = ctx.slotHalf(me, chunkId(k));
      const size_t l = chunkLen(k);
      for (int b = 0; b < n; ++b) {
        if (b == me) continue;
        ctx.stores().copyToSlot(slot + bytes(b * l), send + bytes(b * a_.count) + chunkOffset(k), bytes(l),
                                bytes(a_.count) * n);
      }
    }
    if (stage(phase, 1, k)) {
      const size_t l = chunkLen(k);
      for (int r = 0; r < n; ++r) {
        // This rank's own block goes straight from its input (after the first barrier, as every
        // output write): staging it would copy it twice. In place it is already there.
        if (r == me && send == recv) continue;
        const std::byte* from = r == me ? send + bytes(me * a_.count) + chunkOffset(k)
                                        : ctx.slotHalf(r, chunkId(k)) + bytes(me * l);
        std::memcpy(recv + bytes(r * a_.count) + chunkOffset(k), from, bytes(l));
      }
    }
  }
};

}  // namespace

std::unique_ptr<Op> makeStagedBroadcast(const CollArgs& a) { return std::make_unique<BroadcastOp>(a); }
std::unique_ptr<Op> makeStagedAllGather(const CollArgs& a) { return std::make_unique<AllGatherOp>(a); }
std::unique_ptr<Op> makeStagedAlltoAll(const CollArgs& a) { return std::make_unique<AlltoAllOp>(a); }

}  // namespace conflux
