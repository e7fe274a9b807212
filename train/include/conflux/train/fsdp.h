// Fully sharded data parallelism over Conflux.
//
// The caller describes its model as units (a layer, a block), each a flat buffer of `count`
// elements. Each unit is padded to a multiple of the shard group's size and split evenly: a rank
// keeps only its shard of the parameters and of the gradients, and the optimizer steps only that
// shard. Around each unit's forward and backward the caller calls
//
//   void* w = fsdp.unshard(u);          // AllGather of the full parameters (waits if prefetched)
//   ...forward or backward of unit u; in backward, gradients accumulate into fsdp.grad(u)
//   fsdp.reduceGradients(u);           // backward only: ReduceScatter (Avg) into the local shard
//   fsdp.reshard(u);                   // frees the full parameters (as the strategy says)
//
// between beginForward() / beginBackward() and finishBackward(). unshard(u) also starts the
// AllGather of the next unit in the current direction (u+1 in forward, u-1 in backward), so it
// overlaps unit u's compute. Gathers run on one stream and reductions on another.
//
// Strategies (PyTorch's names):
//   kFullShard    parameters gathered for forward, freed, gathered again for backward
//   kShardGradOp  parameters stay gathered from forward until after their backward
//   kNoShard      nothing sharded; gradients AllReduced (DDP through the same interface)
//   kHybridShard  sharded inside a group (default: the ranks of one host, from cfxCommHost),
//                 replicated across groups: ReduceScatter in the group, then AllReduce of the
//                 shard across the groups' same-position ranks. Both communicators come from
//                 cfxCommSplit.
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <memory>
#include <string>

#include "conflux/train/error.h"

namespace conflux::train {

enum class ShardingStrategy { kFullShard, kShardGradOp, kNoShard, kHybridShard };

struct FsdpOptions {
  ShardingStrategy strategy = ShardingStrategy::kFullShard;
  int hybridShardSize = 0;  // kHybridShard: ranks per shard group; 0 = the ranks of one host
  bool prefetch = true;
};

// Bytes this rank holds, now and at its peak since construction (or resetPeak()).
struct FsdpMemory {
  size_t paramBytes = 0, gradBytes = 0;          // shards plus gathered units and full gradients
  size_t peakParamBytes = 0, peakGradBytes = 0;
  size_t peakTotalBytes = 0;                     // peak of params + grads together
};

class CFX_TRAIN_API FullyShardedDataParallel {
 public:
  // `comm` stays the caller's and must outlive this object. The constructor is collective (it
  // splits communicators for kHybridShard).
  explicit FullyShardedDataParallel(cfxComm_t comm, FsdpOptions options = {});
  ~FullyShardedDataParallel();
  FullyShardedDataParallel(const FullyShardedDataParallel&) = delete;
  FullyShardedDataParallel& operator=(const FullyShardedDataParallel&) = delete;

  // Registers a unit of `count` elements (forward order); returns its index.
  int addUnit(std::string name, size_t count, cfxDataType_t dtype = cfxFloat32);
  // Collective: checks every rank registered the same units, allocates the shards (zeroed).
  void finalize();

  // Collective: every rank writes its shard (shardCount(u) elements) of `full` (count elements,
  // read on `root` only; may be NULL elsewhere) into `shard`: for optimizer state shaped like u.
  void scatterFull(int unit, const void* full, void* shard, int root = 0);
  // scatterFull into the unit's parameter shard.
  void loadFull(int unit, const void* full, int root = 0) { scatterFull(unit, full, shardParams(unit), root); }
  // Collective: writes unit u's full tensor, assembled from every rank's `shard` (shardCount(u)
  // elements: the parameter shard, or optimizer state shaped like it), into `full` on `root`
  // (count elements; may be NULL elsewhere).
  void gatherFull(int unit, const void* shard, void* full, int root = 0);

  void beginForward();
  void beginBackward();
  // The full parameters of unit u (count elements, padded), valid until reshard(u).
  void* unshard(int unit);
  // Backward: the full gradient buffer of unit u (zeroed when u is unsharded for backward).
  void* grad(int unit);
  void reshard(int unit);
  void reduceGradients(int unit);
  // Waits for every reduction; the shard gradients then hold the average over all ranks.
  void finishBackward();

  int unitCount() const;
  size_t unitCount(int unit) const;       // elements of unit u as registered
  size_t shardCount(int unit) const;      // elements of this rank's shard
  size_t shardOffset(int unit) const;     // where the shard starts in the padded unit
  void* shardParams(int unit);
  void* shardGrads(int unit);
  int shardGroupSize() const;
  FsdpMemory memory() const;
  void resetPeak();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::train
