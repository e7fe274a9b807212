#include "ops/collective.h"

#include <algorithm>

#include "reduce/kernels.h"

namespace conflux {

PhasedCollective::PhasedCollective(const CollArgs& a) : a_(a), esize_(reduce::dataTypeSize(a.datatype)) {
  desc_.coll = static_cast<int32_t>(a.coll);
  desc_.datatype = a.datatype;
  bool reduces = a.coll == Coll::kAllReduce || a.coll == Coll::kReduce || a.coll == Coll::kReduceScatter;
  desc_.op = reduces ? a.op : -1;
  desc_.root = a.root;
  desc_.count = a.count;
}

bool PhasedCollective::progress(Context& ctx) {
  if (done_) return false;
  bool moved = false;
  if (phases_ < 0) {
    if (a_.count == 0) {  // nothing to move: no synchronisation, as in NCCL
      done_ = true;
      return true;
    }
    desc_.seq = ctx.nextOpSeq();
    ctx.publish(desc_);
    phases_ = plan(ctx);
    moved = true;
  }
  for (;;) {
    if (barrier_ != 0) {
      if (!ctx.allArrived(barrier_)) return moved;
      barrier_ = 0;
      moved = true;
      if (!checked_) {
        ctx.checkDescriptors(desc_);
        checked_ = true;
      }
    }
    if (phase_ == phases_) {
      done_ = true;
      return true;
    }
    runPhase(ctx, phase_++);
    moved = true;
    if (phase_ < phases_) barrier_ = ctx.arrive();
  }
}

std::string PhasedCollective::describe(const Context& ctx) const {
  static const char* const kNames[] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter", "AlltoAll"};
  std::string s = std::string(kNames[static_cast<int>(a_.coll)]) + " (phase " + std::to_string(phase_) + "/" +
                  std::to_string(phases_) + ")";
  if (barrier_ != 0) {
    s += ", ranks not yet arrived:";
    for (int r : ctx.notArrived(barrier_)) s += " " + std::to_string(r);
  }
  return s;
}

void PhasedCollective::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (barrier_ == 0) return;
  for (int r : ctx.notArrived(barrier_)) ranks.push_back(r);
}

void PhasedCollective::sliceOf(size_t len, int r, int nranks, size_t& lo, size_t& hi) const {
  size_t align = std::max<size_t>(1, 64 / esize_);
  size_t per = (len + nranks - 1) / nranks;
  per = (per + align - 1) / align * align;
  lo = std::min(len, per * r);
  hi = std::min(len, lo + per);
}

}  // namespace conflux
