#include "ops/collective.h"

#include <algorithm>
#include <chrono>

#include "common/arith.h"
#include "ops/single_copy.h"
#include "ops/zero_copy.h"
#include "reduce/kernels.h"

namespace conflux {

namespace {
int64_t wallNs() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
}
}  // namespace

PhasedCollective::PhasedCollective(const CollArgs& a)
    : a_(a), esize_(reduce::dataTypeSize(a.datatype)), desc_(callDescriptor(a)) {}

bool PhasedCollective::progress(Context& ctx) {
  if (done_) return false;
  bool moved = false;
  if (phases_ < 0) {
    if (a_.count == 0) {  // nothing to move: no synchronisation, as in NCCL
      done_ = true;
      return true;
    }
    desc_.seq = ctx.nextOpSeq();
    phases_ = 0;
    moved = true;
  }
  if (!published_) {
    if (!ctx.allFinished(gateSeq())) return moved;
    published_ = true;
    ctx.publish(desc_);
    // Also announce the call in the mailbox: a rank that took the mailbox path for a call that
    // differs from ours (a count mismatch can put ranks on different paths) sees the mismatch
    // there, and we see its mailbox below.
    Mailbox& box = ctx.mailbox(ctx.rank(), desc_.seq);
    box.call = desc_;
    ctx.publishMailbox(box, desc_.seq);
    if (a_.agreeOnBuffers) {
      // Where this rank's buffers lie, then a barrier before choosing the path (ops/zero_copy.h).
      size_t sendBytes, recvBytes;
      bufferBytes(a_, ctx.rank(), ctx.size(), sendBytes, recvBytes);
      ctx.registered().publish(desc_.seq, sendBytes > 0 ? a_.send : nullptr, sendBytes,
                               recvBytes > 0 ? a_.recv : nullptr, recvBytes);
      if (a_.singleCopyReduce) ctx.publishCmaAddress(desc_.seq, a_.send, recvBytes > 0 ? a_.recv : nullptr);
      if (a_.gatherTrial) startGatherTrial(ctx);
      barrier_ = ctx.arrive();
    } else {
      phases_ = plan(ctx);
      planned_ = true;
    }
    moved = true;
  }
  for (;;) {
    if (barrier_ != 0) {
      if (!ctx.allArrived(barrier_)) {
        if (!checked_) checkMailboxes(ctx);
        return moved;
      }
      barrier_ = 0;
      moved = true;
      if (!checked_) {
        ctx.checkDescriptors(desc_);
        checked_ = true;
      }
      if (!planned_) {
        zeroCopy_ = zeroCopyReady(ctx, a_, desc_.seq);
        singleCopy_ = !zeroCopy_ && a_.singleCopyReduce && singleCopyReduceReady(ctx, a_, desc_.seq);
        gatherSingle_ = !zeroCopy_ && a_.gatherTrial && ctx.gatherPath(desc_.seq) == GatherPath::kSingleCopy;
        phases_ = zeroCopy_ || singleCopy_ || gatherSingle_ ? 2 : plan(ctx);
        planned_ = true;
        continue;
      }
    }
    if (phase_ == phases_) {
      if (trialStartNs_ >= 0 && !zeroCopy_) {
        const GatherPath path = gatherSingle_ ? GatherPath::kSingleCopy : GatherPath::kStaged;
        ctx.gatherPaths().record(gatherOutputBytes(a_, ctx.size()), path, wallNs() - trialStartNs_);
      }
      if (handoffStartNs_ >= 0) ctx.handoffs().record(handoffBytes_, streamHandoffs_, wallNs() - handoffStartNs_);
      ctx.finishOp(desc_.seq);
      done_ = true;
      return true;
    }
    if (singleCopy_) {
      if (phase_ == 0) runSingleCopyReduce(ctx, a_, desc_.seq);  // then only a barrier, as below
    } else if (gatherSingle_) {
      if (phase_ == 0) runSingleCopyGather(ctx, a_, desc_.seq);  // the same
    } else if (!zeroCopy_) {
      runPhase(ctx, phase_);
    } else if (phase_ == 0) {  // then only a barrier: no rank leaves while a peer uses its buffers
      runZeroCopy(ctx, a_, desc_.seq, ctx.privateScratch(kZeroCopyBlockBytes));
    }
    ++phase_;
    moved = true;
    if (phase_ < phases_) barrier_ = ctx.arrive();
  }
}

void PhasedCollective::startGatherTrial(Context& ctx) {
  ctx.publishCmaAddress(desc_.seq, a_.send);
  if (ctx.rank() != 0) return;
  const size_t bytes = gatherOutputBytes(a_, ctx.size());
  const PathTrial::Pick pick = ctx.gatherPaths().next(bytes);
  ctx.publishGatherPath(desc_.seq, pick.path);
  if (pick.timed) trialStartNs_ = wallNs();
}

void PhasedCollective::pickHandoffStores(Context& ctx, size_t bytes) {
  const HandoffStores::Pick pick = ctx.handoffs().next(bytes);
  streamHandoffs_ = pick.streaming;
  if (!pick.timed) return;
  handoffBytes_ = bytes;
  handoffStartNs_ = wallNs();
}

std::string PhasedCollective::describe(const Context& ctx) const {
  std::string s = collectiveName(static_cast<int32_t>(a_.coll));
  if (phases_ >= 0 && !published_) {
    std::vector<int> lagging;
    ctx.allFinished(gateSeq(), &lagging);
    s += " #" + std::to_string(desc_.seq) + ", waiting for ranks to finish operation #" + std::to_string(gateSeq()) + ":";
    for (int r : lagging) s += " " + std::to_string(ctx.commRank(r));
    return s;
  }
  if (phases_ < 0) return s + " (not started: an earlier step of this call is still running)";
  s += " (phase " + std::to_string(phase_) + "/" + std::to_string(phases_) + ")";
  if (barrier_ != 0) {
    s += ", ranks not yet arrived:";
    for (int r : ctx.notArrived(barrier_)) s += " " + std::to_string(ctx.commRank(r));
  }
  return s;
}

void PhasedCollective::checkMailboxes(const Context& ctx) const {
  for (int r = 0; r < ctx.size(); ++r) {
    const Mailbox& box = ctx.mailbox(r, desc_.seq);
    if (box.seq.load(std::memory_order_acquire) == desc_.seq && !(box.call == desc_)) {
      throwMismatch(ctx.commRank(ctx.rank()), desc_, ctx.commRank(r), box.call);
    }
  }
}

void PhasedCollective::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (phases_ >= 0 && !published_) {
    ctx.allFinished(gateSeq(), &ranks);
    return;
  }
  if (barrier_ == 0) return;
  for (int r : ctx.notArrived(barrier_)) ranks.push_back(r);
}

int PhasedCollective::planChunks(Context& ctx, size_t chunkElems, int pipelineDepth) {
  chunkElems_ = std::max<size_t>(1, chunkElems);
  nchunks_ = ceilDiv(a_.count, chunkElems_);
  firstChunk_ = ctx.reserveChunks(nchunks_);
  return static_cast<int>(nchunks_) + pipelineDepth - 1;
}

void sliceOf(size_t len, size_t esize, int r, int nranks, size_t& lo, size_t& hi) {
  size_t align = std::max<size_t>(1, 64 / esize);
  const size_t per = roundUp(ceilDiv(len, static_cast<size_t>(nranks)), align);
  lo = std::min(len, per * r);
  hi = std::min(len, lo + per);
}

}  // namespace conflux
