// An operation is a non-blocking state machine: progress() moves it as far as it can without
// waiting and reports whether anything changed. The executor (executor.h) drives a batch of
// operations and decides when to spin, yield or sleep.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/conflux.h"
#include "context.h"

namespace conflux {

class Op {
 public:
  virtual ~Op() = default;
  virtual bool progress(Context& ctx) = 0;
  virtual bool done() const = 0;
  // The outputs are final, and the operation only confirms, with further progress, that every rank
  // made the same call (a latency-path call that returned early, ops/mailbox_op.cc): its sequence
  // number then, else 0. The engine lets a call that is alone in its batch return then, and
  // confirms it by that number in later batches (engine.h, ops/early_calls.h).
  virtual uint64_t readyEarly() const { return 0; }
  // Whether it may start while earlier calls that returned ready early are still being confirmed.
  virtual bool runsAhead() const { return false; }
  // What the operation is waiting for, for timeout messages.
  virtual std::string describe(const Context& ctx) const = 0;
  // The local ranks whose progress this operation is blocked on now (checked for liveness).
  virtual void waitingOn(const Context& ctx, std::vector<int>& ranks) const = 0;
  // The communicator ranks on other hosts whose transfers this operation is blocked on now.
  virtual void waitingAcross(std::vector<int>& /*ranks*/) const {}
  // Proof already in hand that a peer made a different collective call (a message of its call
  // with the same number arrived): why, in words; else empty. Checked while the wait sleeps.
  // `oldestOpen`: the lowest call number among this rank's unfinished operations (0: none), so a
  // message of an earlier call still open in the same group is not read as one of a finished call.
  virtual std::string crossedCall(uint32_t /*oldestOpen*/) const { return {}; }
  // Point-to-point operations progress concurrently, one at a time per (peer, direction);
  // collectives run one after another in issue order.
  virtual bool isPointToPoint() const { return false; }
  virtual int peer() const { return -1; }
  virtual bool isSend() const { return false; }
  // A point-to-point operation over this host's shared memory small enough to finish in a few
  // polls once its peer is there (runQuick, executor.h): 2 * peer() + 1 for a
  // send, 2 * peer() for a receive; -1 for any other operation.
  virtual int quickKey() const { return -1; }
  // The communicator's call number of a collective call that spans hosts (its messages carry it);
  // 0 for anything else. A failure is attributed to this call (net::Transport::shutdown).
  virtual uint32_t callSeq() const { return 0; }

  // This operation's id in its communicator's flight recorder (flight/recorder.h); 0: not recorded.
  uint64_t flightId = 0;
};

enum class Coll { kAllReduce = 0, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll };

struct CollArgs {
  Coll coll;
  const void* send;
  void* recv;
  size_t count;  // NCCL's meaning: per-rank count for AllGather, ReduceScatter and AlltoAll
  cfxDataType_t datatype;
  cfxRedOp_t op;  // ignored for data-movement collectives
  int root;       // -1 where the collective has none
  // A step of a collective call that spans hosts: that call (ops/call_tag.h) and its number, so
  // ranks on this host that made different calls find out here; 0 otherwise.
  uint64_t outerCall = 0;
  uint32_t outerSeq = 0;
  // The call may run on registered buffers (ops/zero_copy.h): every rank publishes its buffers and
  // meets the others at a first barrier before the path is chosen. Every rank sets it alike
  // (Tuning::mayRegister); it is part of the call's descriptor, so a rank that differs is a mismatch.
  bool agreeOnBuffers = false;
  // With agreeOnBuffers: the call reduces over cross-memory attach (up to 16 MiB, or when every
  // rank is in place: ops/single_copy.h). Set alike by every rank (useSingleCopyReduce), and in the descriptor.
  bool singleCopyReduce = false;
  // With agreeOnBuffers: a large AllGather or Broadcast whose path, staged or single copy, local
  // rank 0 chooses (ops/path_trial.h). Set alike by every rank (useGatherTrial), and in the descriptor.
  bool gatherTrial = false;
};

// Whether collective `c` applies a reduction op.
inline bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

// Everything ranks must agree on for a collective call (collective, datatype, op where it
// reduces, root where it has one, count); `seq` is filled in when the call starts. Inline: every
// latency-path call builds one.
inline OpDescriptor callDescriptor(const CollArgs& a) {
  OpDescriptor d;
  d.coll = static_cast<int32_t>(a.coll);
  d.datatype = a.datatype;
  d.op = reduces(a.coll) ? a.op : -1;
  d.root = a.root;
  d.count = a.count;
  d.outer = a.outerCall;
  d.outerSeq = a.outerSeq;
  d.flags = (a.agreeOnBuffers ? kDescAgreeOnBuffers : 0) | (a.singleCopyReduce ? kDescSingleCopyReduce : 0) |
            (a.gatherTrial ? kDescGatherTrial : 0);
  return d;
}

struct Tuning;
// The operation for `args` on a communicator of `nranks` ranks, with its algorithm chosen by `tuning`.
std::unique_ptr<Op> makeCollective(const CollArgs& args, const Tuning& tuning, int nranks);
// Over the shared-memory channel to local rank `peer`; `reportPeer` is its communicator rank
// when that differs (communicators spanning hosts). `singleCopy`: the receiver reads the buffer
// straight from this process (Tuning::p2pSingleCopy).
std::unique_ptr<Op> makeSend(const void* buf, size_t bytes, int peer, int reportPeer = -1, bool singleCopy = false);
std::unique_ptr<Op> makeRecv(void* buf, size_t bytes, int peer, int reportPeer = -1);

}  // namespace conflux
