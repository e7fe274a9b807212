// AllGather, AlltoAll and Broadcast for large messages, with one copy instead of two: each rank
// reads its peers' user buffers directly (cross-memory attach, process_vm_readv) into its output.
//   phase 0: publish the address of this rank's input (with the call's descriptor);
//   phase 1: read from every peer straight into the output;
//   phase 2: nothing; its barrier only holds every rank until all have finished reading its
//            input, so no caller reuses a buffer a peer is still reading.
// In-place AlltoAll keeps the staged path (a rank's output overwrites input its peers read).
#include <cstring>
#include <string>

#include "ops/collective.h"
#include "ops/single_copy.h"
#include "reduce/kernels.h"
#include "transport/shm/cma.h"

namespace conflux {

namespace {

// Reads local rank r's buffer. A peer that failed returns from its call and may free that buffer,
// or exit, while this rank reads it (EFAULT, ESRCH): its failure, published before it returned,
// is then the cause to report, not the failed copy.
void readPeer(Context& ctx, int r, void* dst, const void* src, size_t bytes) {
  try {
    shm::cmaRead(ctx.pid(r), ctx.commRank(r), dst, src, bytes);
  } catch (const Error& e) {
    const std::string failed = e.what();
    ctx.health().checkAbortAndPoison([&] { return "a copy from rank " + std::to_string(ctx.commRank(r)) + " (" + failed + ")"; },
                            false);
    throw;
  }
}

class SingleCopyOp : public PhasedCollective {
 public:
  using PhasedCollective::PhasedCollective;

 protected:
  int plan(Context&) override { return 3; }

  void runPhase(Context& ctx, int phase) override {
    const auto* send = static_cast<const std::byte*>(a_.send);
    auto* recv = static_cast<std::byte*>(a_.recv);
    const int n = ctx.size(), me = ctx.rank();
    const size_t block = bytes(a_.count);
    if (phase == 0) {
      ctx.publishCmaAddress(seq(), send);
      return;
    }
    if (phase != 1) return;
    switch (a_.coll) {
      case Coll::kAllGather:
        for (int r = 0; r < n; ++r) {
          if (r == me) {
            if (send != recv + me * block) std::memcpy(recv + me * block, send, block);
          } else {
            readPeer(ctx, r, recv + r * block, ctx.cmaAddress(r, seq()), block);
          }
        }
        break;
      case Coll::kAlltoAll:
        for (int r = 0; r < n; ++r) {
          const auto* theirs = static_cast<const std::byte*>(ctx.cmaAddress(r, seq())) + me * block;
          if (r == me) {
            std::memcpy(recv + me * block, send + me * block, block);
          } else {
            readPeer(ctx, r, recv + r * block, theirs, block);
          }
        }
        break;
      case Coll::kBroadcast:
        if (me == a_.root) {
          if (send != recv) std::memcpy(recv, send, block);
        } else {
          readPeer(ctx, a_.root, recv, ctx.cmaAddress(a_.root, seq()), block);
        }
        break;
      default:
        break;
    }
  }
};

}  // namespace

bool useSingleCopy(const CollArgs& a, const Tuning& tuning, int nranks) {
  if (!tuning.cma || tuning.forced != Algo::kAuto) return false;
  if (a.coll != Coll::kAllGather && a.coll != Coll::kAlltoAll && a.coll != Coll::kBroadcast) return false;
  if (a.coll == Coll::kAlltoAll && a.send == a.recv) return false;
  size_t total = a.count * reduce::dataTypeSize(a.datatype) * (a.coll == Coll::kBroadcast ? 1 : nranks);
  if (a.coll != Coll::kAlltoAll && total > Tuning::kCmaMaxGatherBytes) return false;
  return total >= tuning.cmaMinBytes;
}

std::unique_ptr<Op> makeSingleCopy(const CollArgs& a) { return std::make_unique<SingleCopyOp>(a); }

}  // namespace conflux
