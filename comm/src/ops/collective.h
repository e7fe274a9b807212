// The skeleton every shared-memory collective shares.
//
// A collective is cut into chunks that fit half of a staging slot, and run as a pipeline of
// phases with one barrier between consecutive phases. In phase p a rank may
//   - stage chunk p:      write its own slot half for chunk p,
//   - combine chunk p-1:  read every rank's slot half for chunk p-1 (and write its scratch slice),
//   - finish chunk p-2:   read the scratch half for chunk p-2.
// Writers and readers of one phase always touch different halves, because halves alternate with
// the global chunk number, and the barrier after a phase guarantees that every rank finished it
// before anyone reuses those halves two chunks later. The last phase needs no barrier: the next
// collective's first phase only writes halves of the next chunk number.
//
// Before the first barrier each rank publishes a descriptor of the call; after it, every rank
// checks that all ranks called the same collective with the same arguments. A call that may run on
// registered buffers (CollArgs::agreeOnBuffers) also publishes where its buffers lie, and its first
// barrier comes before any phase: after it every rank sees the same table and chooses the same
// path, zero-copy (ops/zero_copy.h) or the phases below. Descriptors (and the
// single-copy addresses) alternate with the sequence parity, so a collective publishes only once
// every rank has finished the operation two before it: latency-path operations that wait for no
// one (ops/mailbox_op.cc) let a rank run ahead.
#pragma once

#include <algorithm>

#include "ops/op.h"

namespace conflux {

// Element range [lo, hi) of `len` elements of `esize` bytes that rank r of `nranks` works on, in
// whole cache lines (the staged paths' combine step and the zero-copy reductions).
void sliceOf(size_t len, size_t esize, int r, int nranks, size_t& lo, size_t& hi);

class PhasedCollective : public Op {
 public:
  explicit PhasedCollective(const CollArgs& a);
  bool progress(Context& ctx) final;
  bool done() const final { return done_; }
  std::string describe(const Context& ctx) const final;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const final;

 protected:
  // Called once, before the first phase: compute chunking; return the number of phases.
  virtual int plan(Context& ctx) = 0;
  virtual void runPhase(Context& ctx, int phase) = 0;

  // Element range [lo, hi) of a chunk of `len` elements that rank r combines (cache-line aligned).
  void sliceOf(size_t len, int r, int nranks, size_t& lo, size_t& hi) const {
    conflux::sliceOf(len, esize_, r, nranks, lo, hi);
  }
  size_t bytes(size_t elems) const { return elems * esize_; }

  // Cuts a_.count elements into chunks of `chunkElems`, reserves their global chunk numbers, and
  // returns the phase count: one per chunk plus `pipelineDepth - 1` to drain the pipeline.
  int planChunks(Context& ctx, size_t chunkElems, int pipelineDepth);
  size_t chunkLen(size_t k) const { return std::min(chunkElems_, a_.count - k * chunkElems_); }
  size_t chunkOffset(size_t k) const { return bytes(k * chunkElems_); }
  // Whether chunk `k` = phase - `lag` exists (the pipeline stage `lag` phases behind).
  bool stage(int phase, int lag, size_t& k) const {
    if (phase < lag || static_cast<size_t>(phase - lag) >= nchunks_) return false;
    k = static_cast<size_t>(phase - lag);
    return true;
  }
  uint64_t chunkId(size_t k) const { return firstChunk_ + k; }
  // A staged reduction, from plan(): the stores of this call's hand-offs of `bytes` per rank into
  // the slots and the scratch (ops/handoff_stores.h), in streamHandoffs_; a call of the trial is
  // timed from here to its end.
  void pickHandoffStores(Context& ctx, size_t bytes);
  uint64_t seq() const { return desc_.seq; }

  CollArgs a_;
  size_t esize_;
  bool streamHandoffs_ = false;
  size_t chunkElems_ = 0;
  size_t nchunks_ = 0;
  uint64_t firstChunk_ = 0;

 private:
  // Fails if a rank announced a different call for this sequence number in its mailbox.
  void checkMailboxes(const Context& ctx) const;
  // A large AllGather or Broadcast (CollArgs::gatherTrial): publishes this rank's input for single
  // copies, and on local rank 0 the path of this call, timed while its trial runs.
  void startGatherTrial(Context& ctx);
  // Every rank must have finished this operation before this one publishes (see above).
  uint64_t gateSeq() const { return desc_.seq > 2 ? desc_.seq - 2 : 0; }

  OpDescriptor desc_;
  int phases_ = -1;
  int phase_ = 0;
  uint64_t barrier_ = 0;
  bool published_ = false;  // the descriptor is out (after the gate above)
  bool planned_ = false;    // plan() ran (after the first barrier when the call agrees on buffers)
  bool zeroCopy_ = false;   // every rank's buffers are registered: ops/zero_copy.h, not runPhase
  bool singleCopy_ = false;  // ops/single_copy.h's reduction (singleCopyReduceReady), not runPhase
  bool gatherSingle_ = false;  // local rank 0 chose the single copy (ops/path_trial.h), not runPhase
  int64_t trialStartNs_ = -1;  // local rank 0, while its path trial runs: when this call published
  int64_t handoffStartNs_ = -1;  // a call of the hand-off stores' trial: when it planned
  size_t handoffBytes_ = 0;
  bool checked_ = false;
  bool done_ = false;
};

}  // namespace conflux
