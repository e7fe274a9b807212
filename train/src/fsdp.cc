// FSDP: per-unit sharding with gathered parameters on demand.
//
// State of a unit's parameters: Sharded (only the local shard exists), Gathering (an AllGather
// into a freshly allocated full buffer is queued on the gather stream) or Gathered. The gather
// stream is synchronised as a whole, which is exact here because gathers are issued in the order
// they are needed: unshard(u) waits for u's gather *before* issuing the prefetch of the next unit.
//
// Gradients: unshard(u) in backward allocates a zeroed full gradient buffer; reduceGradients(u)
// issues its ReduceScatter (Avg) into the shard gradient on the reduction stream. At most one
// reduction is left in flight: the next reduceGradients (or finishBackward) first waits for it,
// frees its full gradient and, for kHybridShard, issues the AllReduce of the shard across the
// replica groups (on a third stream, since it runs on another communicator and depends on the
// ReduceScatter's result).
#include "conflux/train/fsdp.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "agreement.h"

namespace conflux::train {
namespace {

enum class Phase { kNone, kForward, kBackward };
enum class ParamState { kSharded, kGathering, kGathered };

struct Unit {
  std::string name;
  size_t count = 0;
  cfxDataType_t dtype = cfxFloat32;
  size_t esize = 4;
  size_t shard = 0;  // elements per rank
  std::vector<std::byte> shardParams, shardGrads;
  std::unique_ptr<std::byte[]> full, fullGrad;
  ParamState state = ParamState::kSharded;
};

}  // namespace

struct FullyShardedDataParallel::Impl {
  cfxComm_t comm = nullptr;        // the caller's
  cfxComm_t shardComm = nullptr;   // shards live across this one (null: nothing sharded)
  cfxComm_t replComm = nullptr;    // gradients averaged across this one after the ReduceScatter
  bool ownShard = false, ownRepl = false;
  FsdpOptions opts;
  int rank = 0, nranks = 1;
  int groupSize = 1, groupPos = 0;
  cfxStream_t gatherStream = nullptr, rsStream = nullptr, arStream = nullptr;
  std::vector<Unit> units;
  std::vector<int> pendingRs;
  bool finalized = false;
  Phase phase = Phase::kNone;
  FsdpMemory mem;

  bool noShard() const { return opts.strategy == ShardingStrategy::kNoShard; }

  Unit& unit(int u, const char* what) {
    if (!finalized) throw Error(cfxInvalidUsage, std::string(what) + " before finalize()");
    if (u < 0 || u >= static_cast<int>(units.size())) {
      throw Error(cfxInvalidArgument, std::string(what) + ": unit " + std::to_string(u) + " is not registered (" +
                                          std::to_string(units.size()) + " units)");
    }
    return units[static_cast<size_t>(u)];
  }

  void account(size_t& bytes, size_t& peak, size_t n, bool add) {
    bytes = add ? bytes + n : bytes - n;
    peak = std::max(peak, bytes);
    mem.peakTotalBytes = std::max(mem.peakTotalBytes, mem.paramBytes + mem.gradBytes);
  }
  size_t fullBytes(const Unit& x) const { return x.shard * static_cast<size_t>(groupSize) * x.esize; }

  void allocFull(Unit& x) {
    x.full.reset(new std::byte[fullBytes(x)]);
    account(mem.paramBytes, mem.peakParamBytes, fullBytes(x), true);
  }
  void freeFull(Unit& x) {
    if (!x.full) return;
    x.full.reset();
    account(mem.paramBytes, mem.peakParamBytes, fullBytes(x), false);
    x.state = ParamState::kSharded;
  }
  void allocFullGrad(Unit& x) {
    if (!x.fullGrad) {
      x.fullGrad.reset(new std::byte[fullBytes(x)]);
      account(mem.gradBytes, mem.peakGradBytes, fullBytes(x), true);
    }
    std::memset(x.fullGrad.get(), 0, fullBytes(x));
  }
  void freeFullGrad(Unit& x) {
    if (!x.fullGrad) return;
    x.fullGrad.reset();
    account(mem.gradBytes, mem.peakGradBytes, fullBytes(x), false);
  }

  void issueGather(Unit& x) {
    allocFull(x);
    check(cfxAllGather(x.shardParams.data(), x.full.get(), x.shard, x.dtype, shardComm, gatherStream),
          ("FSDP AllGather of " + x.name).c_str(), shardComm);
    x.state = ParamState::kGathering;
  }
  void waitGathers() {
    check(cfxStreamSynchronize(gatherStream), "FSDP parameter AllGather", shardComm);
    for (Unit& x : units) {
      if (x.state == ParamState::kGathering) x.state = ParamState::kGathered;
    }
  }

  // Waits for the reduction in flight, frees its full gradients, and for kHybridShard issues the
  // AllReduce across replica groups.
  void drainReductions() {
    if (pendingRs.empty()) return;
    check(cfxStreamSynchronize(rsStream), "FSDP gradient reduction", noShard() ? replComm : shardComm);
    for (int u : pendingRs) {
      Unit& x = units[static_cast<size_t>(u)];
      freeFullGrad(x);
      if (replComm != nullptr && !noShard()) {
        check(cfxAllReduce(x.shardGrads.data(), x.shardGrads.data(), x.shard, x.dtype, cfxAvg, replComm, arStream),
              ("FSDP replica AllReduce of " + x.name).c_str(), replComm);
      }
    }
    pendingRs.clear();
  }

  void setUpCommunicators() {
    check(cfxCommUserRank(comm, &rank), "cfxCommUserRank", comm);
    check(cfxCommCount(comm, &nranks), "cfxCommCount", comm);
    switch (opts.strategy) {
      case ShardingStrategy::kFullShard:
      case ShardingStrategy::kShardGradOp:
        shardComm = comm;
        break;
      case ShardingStrategy::kNoShard:
        replComm = comm;
        break;
      case ShardingStrategy::kHybridShard: {
        int color = 0;
        if (opts.hybridShardSize > 0) {
          if (nranks % opts.hybridShardSize != 0) {
            throw Error(cfxInvalidArgument, "FSDP: hybridShardSize " + std::to_string(opts.hybridShardSize) +
                                                " does not divide " + std::to_string(nranks) + " ranks");
          }
          color = rank / opts.hybridShardSize;
        } else {
          int nhosts = 0;
          check(cfxCommHost(comm, &color, &nhosts), "cfxCommHost", comm);
        }
        check(cfxCommSplit(comm, color, rank, &shardComm, nullptr), "FSDP shard-group split", comm);
        ownShard = true;
        int size = 0, pos = 0;
        check(cfxCommCount(shardComm, &size), "cfxCommCount", shardComm);
        check(cfxCommUserRank(shardComm, &pos), "cfxCommUserRank", shardComm);
        int sizes[2] = {size, -size}, extremes[2];
        check(cfxAllReduce(sizes, extremes, 2, cfxInt32, cfxMax, comm, nullptr), "FSDP group-size check", comm);
        if (extremes[0] != -extremes[1]) {
          throw Error(cfxInvalidUsage, "FSDP kHybridShard needs equal shard groups; hosts hold between " +
                                           std::to_string(-extremes[1]) + " and " + std::to_string(extremes[0]) +
                                           " ranks (set hybridShardSize)");
        }
        check(cfxCommSplit(comm, pos, rank, &replComm, nullptr), "FSDP replica-group split", comm);
        ownRepl = true;
        break;
      }
    }
    if (shardComm != nullptr) {
      check(cfxCommCount(shardComm, &groupSize), "cfxCommCount", shardComm);
      check(cfxCommUserRank(shardComm, &groupPos), "cfxCommUserRank", shardComm);
    }
  }
};

FullyShardedDataParallel::FullyShardedDataParallel(cfxComm_t comm, FsdpOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) throw Error(cfxInvalidArgument, "FullyShardedDataParallel: comm is NULL");
  if (options.hybridShardSize < 0) throw Error(cfxInvalidArgument, "FSDP: hybridShardSize is negative");
  impl_->comm = comm;
  impl_->opts = options;
  impl_->setUpCommunicators();
  check(cfxStreamCreate(&impl_->gatherStream), "cfxStreamCreate", nullptr);
  check(cfxStreamCreate(&impl_->rsStream), "cfxStreamCreate", nullptr);
  check(cfxStreamCreate(&impl_->arStream), "cfxStreamCreate", nullptr);
}

FullyShardedDataParallel::~FullyShardedDataParallel() {
  Impl& m = *impl_;
  for (cfxStream_t s : {m.gatherStream, m.rsStream, m.arStream}) {
    if (s == nullptr) continue;
    (void)cfxStreamSynchronize(s);
    (void)cfxStreamDestroy(s);
  }
  if (m.ownShard && m.shardComm != nullptr) (void)cfxCommDestroy(m.shardComm);
  if (m.ownRepl && m.replComm != nullptr) (void)cfxCommDestroy(m.replComm);
}

int FullyShardedDataParallel::addUnit(std::string name, size_t count, cfxDataType_t dtype) {
  Impl& m = *impl_;
  if (m.finalized) throw Error(cfxInvalidUsage, "addUnit(" + name + ") after finalize()");
  Unit x;
  x.esize = dtypeBytes(dtype);
  x.name = std::move(name);
  x.count = count;
  x.dtype = dtype;
  m.units.push_back(std::move(x));
  return static_cast<int>(m.units.size()) - 1;
}

void FullyShardedDataParallel::finalize() {
  Impl& m = *impl_;
  if (m.finalized) throw Error(cfxInvalidUsage, "finalize() called twice");
  Checksum sum;
  uint64_t elements = 0;
  for (const Unit& x : m.units) {
    sum.add(x.count);
    sum.add(static_cast<uint64_t>(x.dtype));
    elements += x.count;
  }
  sum.add(static_cast<uint64_t>(m.opts.strategy));
  sum.add(static_cast<uint64_t>(m.opts.hybridShardSize));
  sum.add(m.opts.prefetch ? 1 : 0);
  agreeOnRegistration(m.comm, "FSDP unit registrations", sum.value(), m.units.size(), elements);
  for (Unit& x : m.units) {
    size_t g = static_cast<size_t>(m.groupSize);
    x.shard = m.noShard() ? x.count : (x.count + g - 1) / g;
    x.shardParams.assign(x.shard * x.esize, std::byte{0});
    x.shardGrads.assign(x.shard * x.esize, std::byte{0});
    m.account(m.mem.paramBytes, m.mem.peakParamBytes, x.shardParams.size(), true);
    m.account(m.mem.gradBytes, m.mem.peakGradBytes, x.shardGrads.size(), true);
  }
  m.finalized = true;
}

void FullyShardedDataParallel::scatterFull(int unit, const void* full, void* shard, int root) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "scatterFull");
  if (shard == nullptr && x.shard > 0) throw Error(cfxInvalidArgument, "scatterFull: shard is NULL");
  if (root < 0 || root >= m.nranks) throw Error(cfxInvalidArgument, "scatterFull: root " + std::to_string(root) + " out of range");
  if (m.rank == root && full == nullptr && x.count > 0) throw Error(cfxInvalidArgument, "scatterFull: full is NULL on root");
  std::vector<std::byte> tmp(std::max(x.count, x.shard * static_cast<size_t>(m.groupSize)) * x.esize, std::byte{0});
  if (m.rank == root && x.count > 0) std::memcpy(tmp.data(), full, x.count * x.esize);
  check(cfxBroadcast(tmp.data(), tmp.data(), x.count, x.dtype, root, m.comm, nullptr), "FSDP scatterFull (Broadcast)", m.comm);
  size_t offset = m.noShard() ? 0 : static_cast<size_t>(m.groupPos) * x.shard;
  std::memcpy(shard, tmp.data() + offset * x.esize, x.shard * x.esize);
}

void FullyShardedDataParallel::gatherFull(int unit, const void* shard, void* full, int root) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "gatherFull");
  if (root < 0 || root >= m.nranks) throw Error(cfxInvalidArgument, "gatherFull: root " + std::to_string(root) + " out of range");
  if (m.rank == root && full == nullptr && x.count > 0) throw Error(cfxInvalidArgument, "gatherFull: full is NULL on root");
  if (shard == nullptr && x.shard > 0) throw Error(cfxInvalidArgument, "gatherFull: shard is NULL");
  if (m.noShard()) {
    if (m.rank == root && x.count > 0) std::memcpy(full, shard, x.count * x.esize);
    return;
  }
  std::vector<std::byte> tmp(m.fullBytes(x));
  check(cfxAllGather(shard, tmp.data(), x.shard, x.dtype, m.shardComm, nullptr), "FSDP gatherFull (AllGather)", m.shardComm);
  if (m.rank == root && x.count > 0) std::memcpy(full, tmp.data(), x.count * x.esize);
}

void FullyShardedDataParallel::beginForward() {
  if (!impl_->finalized) throw Error(cfxInvalidUsage, "beginForward before finalize()");
  impl_->phase = Phase::kForward;
}

void FullyShardedDataParallel::beginBackward() {
  if (!impl_->finalized) throw Error(cfxInvalidUsage, "beginBackward before finalize()");
  impl_->phase = Phase::kBackward;
}

void* FullyShardedDataParallel::unshard(int unit) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "unshard");
  if (m.phase == Phase::kNone) throw Error(cfxInvalidUsage, "unshard(" + x.name + ") outside beginForward/beginBackward");
  bool backward = m.phase == Phase::kBackward;
  if (m.noShard()) {
    if (backward) std::memset(x.shardGrads.data(), 0, x.shardGrads.size());
    return x.shardParams.data();
  }
  if (x.state == ParamState::kSharded) m.issueGather(x);
  if (x.state == ParamState::kGathering) m.waitGathers();
  if (backward) m.allocFullGrad(x);
  int next = unit + (backward ? -1 : 1);
  if (m.opts.prefetch && next >= 0 && next < static_cast<int>(m.units.size())) {
    Unit& y = m.units[static_cast<size_t>(next)];
    if (y.state == ParamState::kSharded) m.issueGather(y);
  }
  return x.full.get();
}

void* FullyShardedDataParallel::grad(int unit) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "grad");
  if (m.noShard()) return x.shardGrads.data();
  if (!x.fullGrad) throw Error(cfxInvalidUsage, "grad(" + x.name + ") before unshard(" + x.name + ") in backward");
  return x.fullGrad.get();
}

void FullyShardedDataParallel::reshard(int unit) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "reshard");
  if (m.noShard() || x.state == ParamState::kSharded) return;
  if (m.opts.strategy == ShardingStrategy::kShardGradOp && m.phase == Phase::kForward) return;
  if (x.state == ParamState::kGathering) m.waitGathers();
  m.freeFull(x);
}

void FullyShardedDataParallel::reduceGradients(int unit) {
  Impl& m = *impl_;
  Unit& x = m.unit(unit, "reduceGradients");
  if (m.phase != Phase::kBackward) throw Error(cfxInvalidUsage, "reduceGradients(" + x.name + ") outside backward");
  if (!m.noShard() && !x.fullGrad) {
    throw Error(cfxInvalidUsage, "reduceGradients(" + x.name + ") without unshard(" + x.name + ") in this backward");
  }
  if (std::find(m.pendingRs.begin(), m.pendingRs.end(), unit) != m.pendingRs.end()) {
    throw Error(cfxInvalidUsage, "reduceGradients(" + x.name + ") twice in one backward");
  }
  m.drainReductions();
  if (m.noShard()) {
    check(cfxAllReduce(x.shardGrads.data(), x.shardGrads.data(), x.shard, x.dtype, cfxAvg, m.replComm, m.rsStream),
          ("FSDP AllReduce of " + x.name).c_str(), m.replComm);
  } else {
    check(cfxReduceScatter(x.fullGrad.get(), x.shardGrads.data(), x.shard, x.dtype, cfxAvg, m.shardComm, m.rsStream),
          ("FSDP ReduceScatter of " + x.name).c_str(), m.shardComm);
  }
  m.pendingRs.push_back(unit);
}

void FullyShardedDataParallel::finishBackward() {
  Impl& m = *impl_;
  if (!m.finalized) throw Error(cfxInvalidUsage, "finishBackward before finalize()");
  m.drainReductions();
  check(cfxStreamSynchronize(m.arStream), "FSDP replica AllReduce", m.replComm);
  if (m.shardComm != nullptr) m.waitGathers();
  m.phase = Phase::kNone;
}

int FullyShardedDataParallel::unitCount() const { return static_cast<int>(impl_->units.size()); }
size_t FullyShardedDataParallel::unitCount(int unit) const { return impl_->unit(unit, "unitCount").count; }
size_t FullyShardedDataParallel::shardCount(int unit) const { return impl_->unit(unit, "shardCount").shard; }
size_t FullyShardedDataParallel::shardOffset(int unit) const {
  const Unit& x = impl_->unit(unit, "shardOffset");
  return impl_->noShard() ? 0 : static_cast<size_t>(impl_->groupPos) * x.shard;
}
void* FullyShardedDataParallel::shardParams(int unit) { return impl_->unit(unit, "shardParams").shardParams.data(); }
void* FullyShardedDataParallel::shardGrads(int unit) { return impl_->unit(unit, "shardGrads").shardGrads.data(); }
int FullyShardedDataParallel::shardGroupSize() const { return impl_->groupSize; }
FsdpMemory FullyShardedDataParallel::memory() const { return impl_->mem; }
void FullyShardedDataParallel::resetPeak() {
  FsdpMemory& mm = impl_->mem;
  mm.peakParamBytes = mm.paramBytes;
  mm.peakGradBytes = mm.gradBytes;
  mm.peakTotalBytes = mm.paramBytes + mm.gradBytes;
}

}  // namespace conflux::train
