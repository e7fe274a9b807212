#include "ops/tuning.h"

#include "common/env.h"
#include "common/error.h"
#include "ops/mailbox_op.h"
#include "transport/shm/cma.h"

namespace conflux {

const char* algoName(Algo a) {
  switch (a) {
    case Algo::kDirect: return "direct";
    case Algo::kRsag: return "rsag";
    case Algo::kMailbox: return "mailbox";
    default: return "auto";
  }
}

const char* netAlgoName(NetAlgo a) {
  switch (a) {
    case NetAlgo::kRing: return "ring";
    case NetAlgo::kTree: return "tree";
    case NetAlgo::kHalvingDoubling: return "rhd";
    case NetAlgo::kFlat: return "flat";
    default: return "auto";
  }
}

Tuning Tuning::fromEnv(bool ownCpus) {
  Tuning t;
  std::string algo = env::getString("CFX_ALGO");
  if (algo == "direct") {
    t.forced = Algo::kDirect;
  } else if (algo == "rsag") {
    t.forced = Algo::kRsag;
  } else if (algo == "mailbox") {
    t.forced = Algo::kMailbox;
  } else if (algo == "ring") {
    t.net = NetAlgo::kRing;
  } else if (algo == "tree") {
    t.net = NetAlgo::kTree;
  } else if (algo == "rhd") {
    t.net = NetAlgo::kHalvingDoubling;
  } else if (algo == "flat") {
    t.net = NetAlgo::kFlat;
  } else if (!algo.empty() && algo != "auto") {
    throw Error(Status::kInvalidArgument,
                "CFX_ALGO='" + algo + "': expected auto, mailbox, direct, rsag (one host) or ring, tree, rhd, flat "
                "(between hosts)");
  }
  int64_t max = env::getInt("CFX_DIRECT_MAX_BYTES");
  if (max < 0) throw Error(Status::kInvalidArgument, "CFX_DIRECT_MAX_BYTES must be >= 0");
  t.directMaxBytes = static_cast<size_t>(max);
  std::string cma = env::getString("CFX_CMA");
  if (cma != "auto" && cma != "0" && cma != "1") throw Error(Status::kInvalidArgument, "CFX_CMA must be auto, 0 or 1");
  // auto: where the host allows it and every local rank has a CPU (oversubscribed ranks lose
  // more to the unpipelined copy than they save).
  t.cma = cma == "1" || (cma == "auto" && shm::cmaAvailable() && ownCpus);
  if (cma == "auto" && shm::cmaAvailable() && !ownCpus) {
    t.sharedCoresBlockBytes = Tuning::kSharedCoresBlockMinDefault;
    t.sharedCoresSendBytes = Tuning::kSharedCoresSendMinDefault;
  }
  int64_t cmaMin = env::getInt("CFX_CMA_MIN_BYTES");
  if (cmaMin < 0) throw Error(Status::kInvalidArgument, "CFX_CMA_MIN_BYTES must be >= 0");
  t.cmaMinBytes = static_cast<size_t>(cmaMin);
  if (env::getString("CFX_CMA_REDUCE_MIN_BYTES") == "auto") {
    t.cmaAllReduceMinBytes = Tuning::kCmaAllReduceMinDefault;
    t.cmaReduceMinBytes = Tuning::kCmaReduceMinDefault;
  } else {
    int64_t cmaReduceMin = env::getInt("CFX_CMA_REDUCE_MIN_BYTES");
    if (cmaReduceMin < 0) throw Error(Status::kInvalidArgument, "CFX_CMA_REDUCE_MIN_BYTES must be auto or >= 0");
    t.cmaAllReduceMinBytes = t.cmaReduceMinBytes = static_cast<size_t>(cmaReduceMin);
  }
  int64_t p2pMin = env::getInt("CFX_P2P_CMA_MIN_BYTES");
  if (p2pMin < 0) throw Error(Status::kInvalidArgument, "CFX_P2P_CMA_MIN_BYTES must be >= 0");
  t.p2pCmaMinBytes = static_cast<size_t>(p2pMin);
  std::string reg = env::getString("CFX_REGISTERED");
  if (reg != "0" && reg != "1") throw Error(Status::kInvalidArgument, "CFX_REGISTERED must be 0 or 1");
  t.registered = reg == "1";
  t.vcollPadding = env::getDouble("CFX_VCOLL_PADDING");
  if (!(t.vcollPadding >= 0)) throw Error(Status::kInvalidArgument, "CFX_VCOLL_PADDING must be >= 0");
  int64_t regMin = env::getInt("CFX_REGISTERED_MIN_BYTES");
  if (regMin < 0) throw Error(Status::kInvalidArgument, "CFX_REGISTERED_MIN_BYTES must be >= 0");
  t.registeredMinBytes = static_cast<size_t>(regMin);
  return t;
}


Algo Tuning::choose(size_t bytes, bool rootOnly) const {
  if (forced == Algo::kDirect || forced == Algo::kRsag) return forced;
  if (directMaxBytes > 0) return bytes <= directMaxBytes ? Algo::kDirect : Algo::kRsag;
  // Built-in rule, measured with all_reduce_perf on 2 to 4 ranks (perf/RESULTS.md): one barrier
  // per chunk wins while latency dominates; beyond 16 KiB rsag's smaller per-rank work wins
  // (Reduce: 64 KiB, where only the root reduces).
  return bytes <= (rootOnly ? kReduceDirectMaxDefault : kDirectMaxDefault) ? Algo::kDirect : Algo::kRsag;
}

std::string Tuning::sharedCoresDescription() const {
  if (sharedCoresBlockBytes == 0 && sharedCoresSendBytes == 0) return "";
  return ", but where ranks share cores v-collective blocks from " + std::to_string(sharedCoresBlockBytes) +
         " bytes, AlltoAll blocks and Send/Recv from " + std::to_string(sharedCoresSendBytes) + " bytes";
}

std::string Tuning::describe() const {
  if (forced != Algo::kAuto) return std::string("algorithm forced to ") + algoName(forced) + " (CFX_ALGO)";
  if (directMaxBytes > 0) {
    return "AllReduce/Reduce: direct up to " + std::to_string(directMaxBytes) + " bytes, then rsag (CFX_DIRECT_MAX_BYTES)";
  }
  return "mailbox up to " + std::to_string(kMailboxBytes) + " bytes of input per rank (AlltoAll and ReduceScatter " +
         std::to_string(kMailboxBlocksMaxBytes) + "); AllReduce direct up to " + std::to_string(kDirectMaxDefault) +
         " bytes (Reduce " + std::to_string(kReduceDirectMaxDefault) + "), then " + (domains >= 2 ? "two-level rsag over " + std::to_string(domains) + " NUMA domains" : std::string("rsag")) +
         "; AllGather/AlltoAll/Broadcast single-copy " +
         (cma ? "from " + std::to_string(cmaMinBytes) + " bytes, AllReduce from " +
                    std::to_string(cmaAllReduceMinBytes) + " bytes, Reduce from " + std::to_string(cmaReduceMinBytes) +
                    " bytes (out of place up to " + std::to_string(kCmaMaxOutOfPlaceReduceBytes) + "), Send/Recv " +
                    (p2pCmaMinBytes > 0 ? "from " + std::to_string(p2pCmaMinBytes) + " bytes" : std::string("never"))
              : std::string("off (CFX_CMA)") + sharedCoresDescription());
}

}  // namespace conflux
