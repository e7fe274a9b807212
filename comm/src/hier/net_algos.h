// The inter-host algorithms, as schedules of steps (schedule.h) over a group of ranks, one per
// host in the hierarchical collectives. `me` is this rank's index in `members` (every member
// calls with the same group). Every reduction runs in a fixed order, so results are the same on
// every rank and from run to run.
#pragma once

#include <cstddef>
#include <vector>

#include "conflux/conflux.h"
#include "hier/schedule.h"

namespace conflux::hier {

struct Group {
  std::vector<int> members;  // communicator ranks
  int me = -1;               // index of this rank, -1 if it is not a member
  int size() const { return static_cast<int>(members.size()); }
};

// How elements combine. Avg combines as Sum, except in the combination that completes the sum,
// which divides by `divisor` before rounding (so the result is sum / nranks rounded once, as on
// one host); finish() divides where no combination is left to do it.
struct Combine {
  cfxDataType_t type;
  cfxRedOp_t op;
  int divisor = 1;  // for Avg: the communicator's size
  size_t esize() const;
  void reduce2(void* dst, const void* a, const void* b, size_t n, bool last = false) const;
  void reduceN(void* dst, const void* const* srcs, int nsrc, size_t n, bool last = false) const;
  void finish(void* buf, size_t n) const;
};

// AllReduce of `count` elements in place in `buf`.
//   ring:  reduce-scatter then all-gather around the ring (bandwidth-optimal: 2(m-1)/m of the
//          buffer per member, 2(m-1) steps);
//   tree:  reduce up, broadcast down a double binary tree, half the buffer per tree, both trees at
//          once (2 log2 m steps: for latency);
//   rhd:   recursive halving reduce-scatter, recursive doubling all-gather (2 log2 m steps and
//          bandwidth-optimal; non-powers of two fold the extra members in first).
std::unique_ptr<Op> ringAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c, Scratch& s);
std::unique_ptr<Op> treeAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c, Scratch& s);
std::unique_ptr<Op> hdAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c, Scratch& s);

// Ring all-gather of blocks of any size: block i (blockPtr[i], blockBytes[i]) starts at member i.
std::unique_ptr<Op> ringAllGatherV(NetEnv env, const Group& g, const std::vector<std::byte*>& blockPtr,
                                   const std::vector<size_t>& blockBytes);
// Ring reduce-scatter: member i ends with the reduction of block i (blockOff[i], blockCount[i]
// elements) of every member's `input` in `out`. `input` is used as working memory.
std::unique_ptr<Op> ringReduceScatter(NetEnv env, const Group& g, std::byte* input, const std::vector<size_t>& blockOff,
                                      const std::vector<size_t>& blockCount, std::byte* out, const Combine& c,
                                      Scratch& s);
// Broadcast from member 0 along a pipelined chain (member 0 -> 1 -> ... -> m-1).
std::unique_ptr<Op> chainBroadcast(NetEnv env, const Group& g, std::byte* buf, size_t bytes);
// Reduce to member 0 over a binomial tree; `buf` holds this member's input and, at member 0,
// receives the result.
std::unique_ptr<Op> binomialReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c,
                                   Scratch& s);

}  // namespace conflux::hier
