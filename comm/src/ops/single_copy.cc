// AllGather, AlltoAll and Broadcast for large messages, with one copy instead of two: each rank
// reads its peers' user buffers directly (cross-memory attach, process_vm_readv) into its output.
//   phase 0: publish the address of this rank's input (with the call's descriptor);
//   phase 1: read from every peer straight into the output;
//   phase 2: nothing; its barrier only holds every rank until all have finished reading its
//            input, so no caller reuses a buffer a peer is still reading.
// In-place AlltoAll keeps the staged path (a rank's output overwrites input its peers read).
//
// AllReduce and Reduce from CFX_CMA_REDUCE_MIN_BYTES (16 KiB and 64 KiB) the same way
// (runSingleCopyReduce, chosen after the call's first barrier as the registered path is,
// ops/collective.cc): rank r owns slice r of the message (the rsag's slices, sliceOf). Chunk by
// chunk, it reads slice r of every peer's input into a buffer of its own (process_vm_readv),
// reduces every rank's chunk in rank order, its own where it lies (the rsag's kernel, sources and
// order, so the same bits), and writes the result into its own output and every peer's
// (process_vm_writev; the root's only, for Reduce). In place, the lines it writes into a peer are
// the ones it just read from there, still in its cache: each buffer is read once and written
// once, with no read for ownership. No rank touches another's slice, and a rank reads a chunk
// before it writes the same chunk, so the chunks need no barrier, and ranks in place and out of
// place mix. Out of place, each write reads its destination first: up to 16 MiB (the outputs of
// a benchmark's calls, and of many a training step's, are still in cache) the path is faster than
// the staged one all the same, above it only in place (Tuning::kCmaMaxOutOfPlaceReduceBytes).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/arith.h"
#include "ops/collective.h"
#include "ops/single_copy.h"
#include "reduce/kernels.h"
#include "transport/shm/cma.h"
#include "transport/shm/liveness.h"

namespace conflux {

namespace {

// Reads from (or writes into) local rank r's buffer. A peer that failed returns from its call and
// may free that buffer, or exit, while this rank copies (EFAULT, ESRCH): its failure, published
// before it returned, is then the cause to report, not the failed copy; a peer killed outright
// published none, and is named as exited, as a wait names it (Health::failDeadPeer).
void copyPeer(Context& ctx, int r, bool write, void* mine, const void* theirs, size_t bytes) {
  try {
    if (write) {
      shm::cmaWrite(ctx.pid(r), ctx.commRank(r), const_cast<void*>(theirs), mine, bytes);
    } else {
      shm::cmaRead(ctx.pid(r), ctx.commRank(r), mine, theirs, bytes);
    }
  } catch (const Error& e) {
    const std::string failed = e.what();
    const auto what = [&] {
      return std::string(write ? "a copy to rank " : "a copy from rank ") + std::to_string(ctx.commRank(r)) + " (" +
             failed + ")";
    };
    ctx.health().checkAbortAndPoison(what, false);
    // The copy's kRemoteError is ESRCH: the peer's memory is gone, though it may not yet show as
    // exited (its address space goes early in its exit).
    if (e.status() == Status::kRemoteError || !shm::processAlive(ctx.pid(r))) ctx.health().failDeadPeer(r, what);
    throw;
  }
}

void readPeer(Context& ctx, int r, void* dst, const void* src, size_t bytes) { copyPeer(ctx, r, false, dst, src, bytes); }

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
      case Coll::kBroadcast:
        runSingleCopyGather(ctx, a_, seq());
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
      default:
        break;
    }
  }
};

// Bytes of each peer's chunk read into this rank per copy: the peers' chunks, the result and the
// lines written back stay in L2. 2-rank AllReduce of 256 MiB in place on the Intel Xeon VM (2 MiB
// of L2 per core), busbw by chunk size: 64 KiB 4.5-4.7 GB/s, 128 KiB 4.8-5.0, 256 KiB 4.6-4.9,
// 512 KiB 4.2-4.3, 1 MiB 4.0-4.1 (perf/RESULTS.md, 2026-11-29).
size_t reduceChunkBytes(int nranks) { return std::clamp<size_t>((size_t{512} << 10) / nranks, 32 << 10, 128 << 10); }

}  // namespace

void runSingleCopyGather(Context& ctx, const CollArgs& a, uint64_t seq) {
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const int n = ctx.size(), me = ctx.rank();
  const size_t block = a.count * reduce::dataTypeSize(a.datatype);
  if (a.coll == Coll::kBroadcast) {
    if (me == a.root) {
      if (send != recv) std::memcpy(recv, send, block);
    } else {
      readPeer(ctx, a.root, recv, ctx.cmaAddress(a.root, seq), block);
    }
    return;
  }
  for (int r = 0; r < n; ++r) {
    if (r == me) {
      if (send != recv + me * block) std::memcpy(recv + me * block, send, block);
    } else {
      readPeer(ctx, r, recv + r * block, ctx.cmaAddress(r, seq), block);
    }
  }
}

bool useGatherTrial(const CollArgs& a, const Tuning& tuning, int nranks) {
  if (!tuning.cma || tuning.forced != Algo::kAuto || a.outerCall != 0) return false;
  if (a.coll != Coll::kAllGather && a.coll != Coll::kBroadcast) return false;
  return gatherOutputBytes(a, nranks) > Tuning::kCmaMaxGatherBytes;
}

size_t gatherOutputBytes(const CollArgs& a, int nranks) {
  const size_t block = a.count * reduce::dataTypeSize(a.datatype);
  return a.coll == Coll::kAllGather ? block * nranks : block;
}

bool useSingleCopyReduce(const CollArgs& a, const Tuning& tuning) {
  if (!tuning.cma || tuning.forced != Algo::kAuto || a.outerCall != 0) return false;
  if (a.coll != Coll::kAllReduce && a.coll != Coll::kReduce) return false;
  const size_t bytes = a.count * reduce::dataTypeSize(a.datatype);
  return bytes >= (a.coll == Coll::kAllReduce ? tuning.cmaAllReduceMinBytes : tuning.cmaReduceMinBytes);
}

bool singleCopyReduceReady(const Context& ctx, const CollArgs& a, uint64_t seq) {
  if (a.count * reduce::dataTypeSize(a.datatype) <= Tuning::kCmaMaxOutOfPlaceReduceBytes) return true;
  for (int r = 0; r < ctx.size(); ++r) {
    if (a.coll == Coll::kReduce && r != a.root) continue;
    if (ctx.cmaAddress(r, seq) != ctx.cmaRecvAddress(r, seq)) return false;
  }
  return true;
}

void runSingleCopyReduce(Context& ctx, const CollArgs& a, uint64_t seq) {
  const int n = ctx.size(), me = ctx.rank();
  const size_t esize = reduce::dataTypeSize(a.datatype);
  size_t lo, hi;
  sliceOf(a.count, esize, me, n, lo, hi);
  if (hi <= lo) return;
  const size_t chunk = std::min(hi - lo, std::max<size_t>(1, reduceChunkBytes(n) / esize));
  // One buffer per peer's chunk, cache-line aligned; this rank's own is the result.
  const size_t stride = roundUp(chunk * esize, size_t{64});
  std::byte* base = ctx.privateScratch(stride * n);
  std::byte* result = base + stride * me;
  std::vector<const void*> srcs(n);
  const auto* send = static_cast<const std::byte*>(a.send);
  const bool allReduce = a.coll == Coll::kAllReduce;
  for (size_t off = lo; off < hi; off += chunk) {
    const size_t len = std::min(chunk, hi - off);
    for (int r = 0; r < n; ++r) {
      if (r == me) {
        srcs[r] = send + off * esize;
        continue;
      }
      std::byte* theirs = base + stride * r;
      readPeer(ctx, r, theirs, static_cast<const std::byte*>(ctx.cmaAddress(r, seq)) + off * esize, len * esize);
      srcs[r] = theirs;
    }
    // Into a buffer of its own: the kernel's output may not alias an input, and this rank's output
    // is its input here.
    reduce::reduce(result, srcs.data(), n, len, a.datatype, a.op, n);
    for (int r = 0; r < n; ++r) {
      if (!allReduce && r != a.root) continue;
      auto* out = static_cast<std::byte*>(ctx.cmaRecvAddress(r, seq)) + off * esize;
      if (r == me) {
        std::memcpy(out, result, len * esize);  // ordinary stores: the lines were just read, and are in cache
      } else {
        copyPeer(ctx, r, true, result, out, len * esize);
      }
    }
  }
}

bool useSingleCopy(const CollArgs& a, const Tuning& tuning, int nranks) {
  if (tuning.forced != Algo::kAuto) return false;
  if (a.coll != Coll::kAllGather && a.coll != Coll::kAlltoAll && a.coll != Coll::kBroadcast) return false;
  if (a.coll == Coll::kAlltoAll && a.send == a.recv) return false;
  const size_t block = a.count * reduce::dataTypeSize(a.datatype);  // AllGather's and AlltoAll's per rank
  if (!tuning.cma) return a.coll == Coll::kAlltoAll && tuning.alltoallSingleCopyWhereCoresShared(block);
  const size_t total = block * (a.coll == Coll::kBroadcast ? 1 : nranks);
  if (a.coll != Coll::kAlltoAll && total > Tuning::kCmaMaxGatherBytes) return false;
  return total >= tuning.cmaMinBytes;
}

std::unique_ptr<Op> makeSingleCopy(const CollArgs& a) { return std::make_unique<SingleCopyOp>(a); }

}  // namespace conflux
