// Broadcast, AllGather and AlltoAll: the collectives that move data without reducing it.
#include <cstring>

#include "ops/collective.h"
#include "ops/copy.h"
#include "ops/latency.h"
#include "ops/tuning.h"

namespace conflux {

namespace {

// Broadcast: the root stages chunk p in its slot half while every other rank copies chunk p-1
// out of the root's other half.
class BroadcastOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    chunkElems_ = ctx.halfBytes() / esize_;
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
    return static_cast<int>(nchunks_ + 1);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    bool root = ctx.rank() == a_.root;
    if (size_t k = phase; root && k < nchunks_) {
      size_t off = bytes(k * chunkElems_);
      std::memcpy(ctx.slotHalf(a_.root, firstChunk_ + k), send + off, bytes(len(k)));
      if (send != recv) std::memcpy(recv + off, send + off, bytes(len(k)));
    }
    if (!root && phase >= 1 && size_t(phase - 1) < nchunks_) {
      size_t k = phase - 1;
      copyOut(recv + bytes(k * chunkElems_), ctx.slotHalf(a_.root, firstChunk_ + k), bytes(len(k)),
              bytes(a_.count) >= kStreamingMinBytes);
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
};

// AllGather: every rank stages chunk p of its input, then copies chunk p-1 of every rank's
// slot into that rank's block of the output.
class AllGatherOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    chunkElems_ = ctx.halfBytes() / esize_;
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
    return static_cast<int>(nchunks_ + 1);
  }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    if (size_t k = phase; k < nchunks_) {
      std::memcpy(ctx.slotHalf(ctx.rank(), firstChunk_ + k), send + bytes(k * chunkElems_), bytes(len(k)));
    }
    if (phase >= 1 && size_t(phase - 1) < nchunks_) {
      size_t k = phase - 1;
      for (int r = 0; r < ctx.size(); ++r) {
        copyOut(recv + bytes(r * a_.count + k * chunkElems_), ctx.slotHalf(r, firstChunk_ + k), bytes(len(k)),
                bytes(a_.count) * ctx.size() >= kStreamingMinBytes);
      }
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
};

// AlltoAll: like ReduceScatter's staging (range p of every outgoing block), then each rank copies
// its own block out of every rank's slot half.
class AlltoAllOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context& ctx) override {
    chunkElems_ = ctx.halfBytes() / (esize_ * ctx.size());
    nchunks_ = (a_.count + chunkElems_ - 1) / chunkElems_;
    firstChunk_ = ctx.reserveChunks(nchunks_);
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
      for (int r = 0; r < n; ++r) {
        std::memcpy(recv + bytes(r * a_.count + k * chunkElems_),
                    ctx.slotHalf(r, firstChunk_ + k) + bytes(ctx.rank() * l), bytes(l));
      }
    }
  }

 private:
  size_t len(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
};

}  // namespace

std::unique_ptr<Op> makeReducingCollective(const CollArgs& a, const Tuning& tuning, int nranks);

std::unique_ptr<Op> makeCollective(const CollArgs& a, const Tuning& tuning, int nranks) {
  // Small calls take the mailbox path unless an algorithm is forced (tests force each one).
  bool mailboxAllowed = tuning.forced == Algo::kAuto || tuning.forced == Algo::kMailbox;
  if (mailboxAllowed && fitsMailbox(a, nranks)) return makeMailboxOp(a, nranks);
  switch (a.coll) {
    case Coll::kBroadcast: return std::make_unique<BroadcastOp>(a);
    case Coll::kAllGather: return std::make_unique<AllGatherOp>(a);
    case Coll::kAlltoAll: return std::make_unique<AlltoAllOp>(a);
    default: return makeReducingCollective(a, tuning, nranks);
  }
}

}  // namespace conflux
