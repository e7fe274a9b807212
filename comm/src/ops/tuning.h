// The settings that steer algorithm selection for one communicator, read from the environment once
// at creation; ops/select.h applies them to each call.
//
// AllReduce and Reduce have two shared-memory algorithms:
//   direct: every rank stages its chunk, then reduces all ranks' chunks (in rank order) straight
//           into its own output: one barrier per chunk and no second copy; each rank reads
//           n x the message. Best for small messages (latency) and few ranks.
//   rsag:   reduce-scatter then all-gather inside shared memory: each rank reduces 1/n of the
//           chunk into a shared scratch, then copies the whole result out. Each rank reads
//           about 2.5 x the message, whatever n: best for large messages on many ranks.
// CFX_ALGO forces one; CFX_DIRECT_MAX_BYTES moves the threshold. On a host whose ranks span two
// or more NUMA domains (topology/plan.h), rsag is two-level: inside each domain, then across.
//
// Every collective whose per-rank input fits a 2 KiB mailbox (AlltoAll and ReduceScatter: 1 KiB)
// takes the mailbox path instead (ops/mailbox_op.cc), unless CFX_ALGO forces an algorithm. Large AllGather, AlltoAll and Broadcast
// copy once, straight from the peers' buffers (ops/single_copy.cc), where the host allows it, and
// so do large Sends (transport/shm/channel.h), and AllReduce and Reduce from 16 and 64 KiB.
#pragma once

#include <cstddef>
#include <string>

namespace conflux {

enum class Algo { kAuto, kDirect, kRsag, kMailbox };
// Between hosts (comm/src/hier/net_tuning.cc, declared in hier/hier_ops.h): ring, double binary tree, halving-doubling, or a
// flat host-ordered ring over all ranks with no shared-memory phase (the baseline it beats).
enum class NetAlgo { kAuto, kRing, kTree, kHalvingDoubling, kFlat };

inline constexpr size_t kDirectMaxDefault = 16 << 10;
// Reduce: only the root reduces, so direct stays ahead longer (2 ranks, 32 KiB: 3.9 against 7.5 us
// for rsag; 4 ranks, 16-64 KiB: 7-17 against 21-32 us; perf/RESULTS.md 2026-11-25).
inline constexpr size_t kReduceDirectMaxDefault = 64 << 10;

struct Tuning {
  Algo forced = Algo::kAuto;
  NetAlgo net = NetAlgo::kAuto;  // CFX_ALGO=ring|tree|rhd|flat
  size_t directMaxBytes = 0;  // 0: the built-in rule
  bool cma = false;           // single-copy AllGather/AlltoAll/Broadcast allowed (CFX_CMA)
  // From this many bytes of output (CFX_CMA_MIN_BYTES). 2-rank medians on the Intel Xeon VM,
  // staged against single copy (perf/RESULTS.md, 2026-11-29, third): AllGather 8 KiB 1.69 against
  // 1.77 us, 16 KiB 2.88 against 2.04, 64 KiB 8.2 against 3.7; AlltoAll 8 KiB 1.44 against 1.73,
  // 16 KiB 2.38 against 1.96; Broadcast 16 KiB 2.12 against 1.55; AlltoAllv 32 KiB 4.6 against 3.2.
  size_t cmaMinBytes = 0;
  // AllReduce and Reduce over single copies (ops/single_copy.h), from this many bytes
  // (CFX_CMA_REDUCE_MIN_BYTES: auto gives these defaults, a number sets both). 2-rank medians on
  // the Intel Xeon VM, staged against single copy (perf/RESULTS.md, 2026-11-29, third):
  // AllReduce 8 KiB 2.2 against 2.9 us, 16 KiB 3.9 against 3.3, 128 KiB 14.4 against 10.2;
  // Reduce 32 KiB 3.4 against 3.8 us, 64 KiB 6.4 against 5.4, 256 KiB 25 against 16.
  size_t cmaAllReduceMinBytes = 0;
  size_t cmaReduceMinBytes = 0;
  static constexpr size_t kCmaAllReduceMinDefault = 16 << 10;
  static constexpr size_t kCmaReduceMinDefault = 64 << 10;
  // Out of place (some rank's output, the root's for Reduce, is not its input) only up to this
  // size: its writes then read their destination first, where the staged path's streaming stores
  // do not (2-rank AllReduce out of place, staged against single copy: 16 MiB 2.53 against 2.49 ms,
  // 32 MiB 5.5 against 7.6 ms).
  static constexpr size_t kCmaMaxOutOfPlaceReduceBytes = 16 << 20;
  size_t p2pCmaMinBytes = 0;  // Send/Recv single copy from this many bytes, 0: never (CFX_P2P_CMA_MIN_BYTES)
  // NUMA domains of a two-level rsag (ops/two_level.cc), from the topology plan; 0: flat.
  int domains = 0;
  // Collectives on registered buffers (ops/zero_copy.h) from this many bytes (CFX_REGISTERED_MIN_BYTES;
  // CFX_REGISTERED=0: never). Off for communicators that span hosts.
  bool registered = true;
  size_t registeredMinBytes = 0;
  // Across hosts, AllGatherv and ReduceScatterv padded to the largest count by at most this
  // fraction take the hierarchical collective (CFX_VCOLL_PADDING; vector_coll.h).
  double vcollPadding = 0.25;
  // AllGather and Broadcast take it up to here; beyond, the path local rank 0 chooses at each call's
  // first barrier, the staged one (streaming stores into the slots) or this (ops/path_trial.h):
  // which is faster depends on the machine.
  static constexpr size_t kCmaMaxGatherBytes = 16 << 20;

  // `ownCpus`: each rank of this host can have a CPU of its own (single copies need it).
  static Tuning fromEnv(bool ownCpus);
  // Whether a Send of `bytes` to another rank of this host offers its buffer for a single copy.
  // From 16 KiB by default (CFX_P2P_CMA_MIN_BYTES). It was off while process_vm_readv measured
  // below the two-copy channel (an AMD EPYC VM, perf/RESULTS.md 2026-11-23); on the Intel Xeon VM,
  // 2-rank sendrecv_perf, channel against single copy: 8 KiB 2.18 against 2.16 us, 16 KiB 3.90
  // against 2.62, 1 MiB 158 against 63, 256 MiB 74 against 62 ms (perf/RESULTS.md, 2026-11-29, third).
  // With ranks sharing cores (single copies off under CFX_CMA=auto), Sends from
  // sharedCoresSendBytes still take them (0: never): the channel's 4 slots then fill, and each
  // refill waits for the receiver's turn on a core. 4-rank sendrecv_perf on 2 CPUs (-n 2000, five
  // rounds, median us), channel against single copy, two runs: 16 KiB 4.89 against 5.84 (one run),
  // 32 KiB 8.00 / 7.97 against 7.01 / 8.88 (no clear winner), 64 KiB 15.3 / 15.3 against 10.7 /
  // 11.2, 256 KiB 60.1 / 60.2 against 24.2 / 25.0, 1 MiB 263 / 267 against 219 / 210 (Open MPI
  // 11.1-12.0, 26.7-28.1, 214-223; perf/RESULTS.md, 2026-11-29, seventh).
  bool p2pSingleCopy(size_t bytes) const {
    return (cma && p2pCmaMinBytes > 0 && bytes >= p2pCmaMinBytes) ||
           (sharedCoresSendBytes > 0 && bytes >= sharedCoresSendBytes);
  }
  size_t sharedCoresSendBytes = 0;
  static constexpr size_t kSharedCoresSendMinDefault = 64 << 10;
  // Where ranks share cores, AlltoAll out of place takes the single copy from blocks (one peer's
  // share) of sharedCoresSendBytes, as the Sends it amounts to do: the staged path moves 4n times
  // the size there, the single copy 2n. 4-rank alltoall_perf on 2 CPUs (-n 20, five rounds, median
  // us), staged against single copy: 128 KiB 32.4 against 30.1, 256 KiB 65.0 against 45.8, 512 KiB
  // 155 against 161, 1 MiB 454 against 366, 16 MiB 7077 against 5858, 64 MiB 36382 against 32715
  // (Open MPI 34.4, 38.6, 116, 283, 5846, 33970). AllGather and Broadcast keep the staged path,
  // which was faster at 4 ranks from 128 KiB to 32 MiB (perf/RESULTS.md, 2026-11-29, eighth).
  bool alltoallSingleCopyWhereCoresShared(size_t blockBytes) const {
    return sharedCoresSendBytes > 0 && blockBytes >= sharedCoresSendBytes;
  }
  // The same for a block of a v-collective (vector_coll.h): from CFX_CMA_MIN_BYTES, of any size, as
  // Open MPI's vader takes its single copy. Blocks above 512 KiB went through the channel until
  // 2026-11-29 (fourth): AlltoAllv at 2 ranks (alltoallv_perf, blocks of half to one and a half
  // times size/2, -n 20-50, five interleaved rounds, median us), channel above 512 KiB against
  // single copies: 1 MiB 143-160 against 90-122 (Open MPI 68-90), 2 MiB 287-301 against 226-239,
  // 8 MiB 1014-1033 against 985-988, 32 MiB 10895 against 5233 (Open MPI 5143), 64 MiB 58065 against
  // 14674 (13843). A cap at 2 MiB, which split 4 MiB's blocks between the two paths, took 692 us.
  // With ranks sharing cores (CFX_CMA=auto turns single copies off there), blocks from
  // sharedCoresBlockBytes still take them (0: never). 4-rank AlltoAllv on 2 CPUs (alltoallv_perf
  // -n 20, seven rounds, median us), channel against single copies from 128 KiB blocks: 512 KiB
  // 165 against 144, 2 MiB 847 against 639, 16 MiB 7367 against 6691 (Open MPI 140, 648, 7288);
  // from 256 KiB blocks: 160, 657, 7140 (perf/RESULTS.md, 2026-11-29, sixth). From 64 KiB blocks,
  // as AlltoAll blocks and Sends (sharedCoresSendBytes), against 128 KiB, on the Intel Xeon VM
  // (alltoallv_perf -n 50, 7-9 interleaved rounds, median us; perf/RESULTS.md, 2026-12-06):
  // 4 ranks 256 KiB 55.5 against 81.9 (Open MPI 58.0), 512 KiB 108 against 129, 2 MiB 491 against
  // 527; 3 ranks 384 KiB 61 against 68, 768 KiB 165 against 182; 8 ranks (-n 20, 5 rounds) 512 KiB
  // 380 against 466, 1-4 MiB within 4% either way.
  bool collectiveSingleCopy(size_t bytes) const {
    return (cma && bytes >= cmaMinBytes) || (sharedCoresBlockBytes > 0 && bytes >= sharedCoresBlockBytes);
  }
  size_t sharedCoresBlockBytes = 0;
  static constexpr size_t kSharedCoresBlockMinDefault = 64 << 10;
  // Whether a collective of `bytes` (its larger buffer) that has a zero-copy path may run on
  // registered buffers: it then publishes them and agrees on the path first.
  bool mayRegister(size_t bytes) const { return registered && forced == Algo::kAuto && bytes >= registeredMinBytes; }
  // The algorithm for an AllReduce (or a Reduce: `rootOnly`) of `bytes`: the same thresholds for
  // every number of ranks (the rule was measured on 2 to 4).
  Algo choose(size_t bytes, bool rootOnly = false) const;
  // The rules in words, for the init log line.
  std::string describe() const;

 private:
  // The single copies taken where ranks share cores, in words ("" if none).
  std::string sharedCoresDescription() const;
};

const char* algoName(Algo a);
const char* netAlgoName(NetAlgo a);

}  // namespace conflux
