#include "ops/select.h"

#include <algorithm>

#include "ops/mailbox_op.h"
#include "ops/single_copy.h"
#include "ops/staged.h"
#include "ops/zero_copy.h"
#include "reduce/kernels.h"

namespace conflux {

HostAlgo selectHostAlgo(const CollArgs& a, const Tuning& tuning, int nranks) {
  if (takesMailbox(a, tuning, nranks)) return HostAlgo::kMailbox;
  if (useSingleCopy(a, tuning, nranks)) return HostAlgo::kSingleCopy;
  switch (a.coll) {
    case Coll::kBroadcast: return HostAlgo::kStagedBroadcast;
    case Coll::kAllGather: return HostAlgo::kStagedAllGather;
    case Coll::kAlltoAll: return HostAlgo::kStagedAlltoAll;
    case Coll::kReduceScatter: return HostAlgo::kStagedReduceScatter;
    default: break;
  }
  if (tuning.choose(a.count * reduce::dataTypeSize(a.datatype), a.coll == Coll::kReduce) == Algo::kDirect) {
    return HostAlgo::kDirect;
  }
  // Two-level reduces each domain's partial sum first: not for an exact op, whose kernel must see
  // every rank's input at once.
  if (tuning.domains >= 2 && !reduce::isExactOp(a.op)) return HostAlgo::kTwoLevel;
  return HostAlgo::kRsag;
}

const char* hostAlgoName(HostAlgo algo) {
  switch (algo) {
    case HostAlgo::kMailbox: return "mailbox";
    case HostAlgo::kSingleCopy: return "single copy";
    case HostAlgo::kStagedBroadcast: return "staged Broadcast";
    case HostAlgo::kStagedAllGather: return "staged AllGather";
    case HostAlgo::kStagedAlltoAll: return "staged AlltoAll";
    case HostAlgo::kStagedReduceScatter: return "staged ReduceScatter";
    case HostAlgo::kDirect: return "direct";
    case HostAlgo::kRsag: return "rsag";
    case HostAlgo::kTwoLevel: return "two-level rsag";
  }
  return "unknown";
}

std::unique_ptr<Op> makeCollective(const CollArgs& args, const Tuning& tuning, int nranks) {
  const HostAlgo algo = selectHostAlgo(args, tuning, nranks);
  if (algo == HostAlgo::kMailbox) return makeMailboxOp(args, nranks);
  CollArgs a = args;
  if (hasZeroCopy(a.coll) && a.outerCall == 0) {
    size_t sendBytes, recvBytes;
    bufferBytes(a, 0, nranks, sendBytes, recvBytes);
    a.agreeOnBuffers = tuning.mayRegister(std::max(sendBytes, recvBytes));
  }
  // AllReduce and Reduce from 16 and 64 KiB reduce over cross-memory attach (above 16 MiB only when
  // every rank is in place, which the ranks learn at the call's first barrier; ops/single_copy.h).
  if (useSingleCopyReduce(a, tuning)) a.singleCopyReduce = a.agreeOnBuffers = true;
  if (useGatherTrial(a, tuning, nranks)) a.gatherTrial = a.agreeOnBuffers = true;
  switch (algo) {
    case HostAlgo::kSingleCopy: return makeSingleCopy(a);
    case HostAlgo::kStagedBroadcast: return makeStagedBroadcast(a);
    case HostAlgo::kStagedAllGather: return makeStagedAllGather(a);
    case HostAlgo::kStagedAlltoAll: return makeStagedAlltoAll(a);
    case HostAlgo::kStagedReduceScatter: return makeStagedReduceScatter(a);
    case HostAlgo::kDirect: return makeDirectAllReduce(a);
    case HostAlgo::kTwoLevel: return makeTwoLevelAllReduce(a);
    case HostAlgo::kRsag:
    case HostAlgo::kMailbox: break;
  }
  return makeRsagAllReduce(a);
}

}  // namespace conflux
