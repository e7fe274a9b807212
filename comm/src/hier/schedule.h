// Building blocks of the collectives that span hosts.
//
// A NetSchedule is an operation made of steps: a step posts its network transfers together,
// waits for all of them, then runs its local action (a reduction or a copy). The inter-host
// algorithms (net_algos.h) only append steps, so they read as the algorithm's prose. A Sequence
// chains operations: shared-memory phases inside the host and network schedules between hosts,
// each starting when the previous one finished.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hosts.h"
#include "ops/op.h"
#include "transport/net/transport.h"

namespace conflux::hier {

// What the inter-host operations reach: the transport and the host table.
struct NetEnv {
  net::Transport* transport = nullptr;
  const HostMap* hosts = nullptr;
  int rank = -1;
  net::CallTag call;  // the collective call whose messages these are (empty for user Send/Recv)
};

struct Xfer {
  int peer;  // communicator rank
  bool send;
  void* buf;
  size_t bytes;
  int channel = net::kCollChannel;
};

struct Step {
  std::vector<Xfer> xfers;
  std::function<void()> then;  // runs once every transfer of the step finished
};

class NetSchedule final : public Op {
 public:
  NetSchedule(NetEnv env, std::string what, std::vector<Step> steps)
      : env_(env), what_(std::move(what)), steps_(std::move(steps)) {}
  bool progress(Context& ctx) override;
  bool done() const override { return cur_ >= steps_.size(); }
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context&, std::vector<int>&) const override {}
  void waitingAcross(std::vector<int>& ranks) const override;

 private:
  NetEnv env_;
  std::string what_;
  std::vector<Step> steps_;
  size_t cur_ = 0;
  bool posted_ = false;
  std::vector<net::RequestPtr> reqs_;
  uint64_t lastMoved_ = 0;
};

// Scratch memory owned by a collective for its lifetime (stable addresses).
class Scratch {
 public:
  std::byte* get(size_t bytes) {
    bufs_.push_back(std::make_unique<std::byte[]>(bytes == 0 ? 1 : bytes));
    return bufs_.back().get();
  }

 private:
  std::vector<std::unique_ptr<std::byte[]>> bufs_;
};

class Sequence final : public Op {
 public:
  Sequence() = default;
  void add(std::unique_ptr<Op> op) { stages_.push_back(std::move(op)); }
  Scratch& scratch() { return scratch_; }
  bool progress(Context& ctx) override;
  bool done() const override { return cur_ >= stages_.size(); }
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;
  void waitingAcross(std::vector<int>& ranks) const override;

 private:
  Scratch scratch_;
  std::vector<std::unique_ptr<Op>> stages_;
  size_t cur_ = 0;
};

// Runs operations concurrently (the two trees of a double binary tree); done when all are.
class Parallel final : public Op {
 public:
  void add(std::unique_ptr<Op> op) { ops_.push_back(std::move(op)); }
  bool progress(Context& ctx) override;
  bool done() const override;
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;
  void waitingAcross(std::vector<int>& ranks) const override;

 private:
  std::vector<std::unique_ptr<Op>> ops_;
};

// One collective call across hosts, whole: runs its operation, and can tell when a message from
// another host already shows that its sender is in a different call with the same number.
class CallScope final : public Op {
 public:
  CallScope(NetEnv env, std::unique_ptr<Op> op) : env_(env), op_(std::move(op)) {}
  bool progress(Context& ctx) override { return op_->progress(ctx); }
  bool done() const override { return op_->done(); }
  std::string describe(const Context& ctx) const override { return op_->describe(ctx); }
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override { op_->waitingOn(ctx, ranks); }
  void waitingAcross(std::vector<int>& ranks) const override { op_->waitingAcross(ranks); }
  std::string crossedCall(uint32_t oldestOpen) const override {
    return env_.transport->crossedCall(env_.call, oldestOpen);
  }
  uint32_t callSeq() const override { return env_.call.seq; }

 private:
  NetEnv env_;
  std::unique_ptr<Op> op_;
};

// Two lanes of operations that overlap: each lane runs its operations in order, and an
// operation may wait for one of the other lane to finish first. The hierarchical AllReduce runs
// shared-memory phases in one lane and network schedules in the other, so chunk k crosses the
// network while chunk k+1 is reduced inside the host. Each lane's order is the same on every
// rank, so shared-memory phases and network messages still match.
class Lanes final : public Op {
 public:
  // Appends `op` to `lane` (0 or 1); it starts once operation `after` of the other lane finished
  // (-1: no dependency). Returns its index in the lane.
  int add(int lane, std::unique_ptr<Op> op, int after = -1);
  bool progress(Context& ctx) override;
  bool done() const override;
  std::string describe(const Context& ctx) const override;
  void waitingOn(const Context& ctx, std::vector<int>& ranks) const override;
  void waitingAcross(std::vector<int>& ranks) const override;

 private:
  struct Item {
    std::unique_ptr<Op> op;
    int after;
  };
  std::vector<Item> lanes_[2];
  size_t cur_[2] = {0, 0};
};

// A local step with no communication (a copy or a scaling), as an operation.
std::unique_ptr<Op> makeLocalAction(std::function<void()> action);

// Point-to-point to a rank on another host.
std::unique_ptr<Op> makeNetSend(NetEnv env, const void* buf, size_t bytes, int peer);
std::unique_ptr<Op> makeNetRecv(NetEnv env, void* buf, size_t bytes, int peer);

}  // namespace conflux::hier
