// Send and Recv over the shared-memory channel of the (sender, receiver) pair; a large send may
// offer its buffer for a single copy (transport/shm/channel.h). One class for both directions, a
// plain value: a group's small transfers are made on the caller's stack and run there
// (Engine::runQuick), and copied to the heap only if they have to wait.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "flight/recorder.h"
#include "ops/op.h"
#include "transport/shm/channel.h"

namespace conflux {

class P2pOp final : public Op {
 public:
  // Up to this size a transfer is a copy of a few KiB at most, into or out of the channel (quickKey).
  static constexpr size_t kQuickBytes = 4096;

  P2pOp() = default;
  // `peer`: the local rank (the channel); `reportPeer`: its communicator rank, for messages and the
  // executor's per-peer ordering. `singleCopy` (sends): offer the buffer for a single copy.
  static P2pOp send(const void* buf, size_t bytes, int peer, int reportPeer, bool singleCopy);
  static P2pOp recv(void* buf, size_t bytes, int peer, int reportPeer);

  bool progress(Context& ctx) override;
  bool done() const override { return t_.complete(); }
  std::string describe(const Context&) const override;
  void waitingOn(const Context&, std::vector<int>& ranks) const override { ranks.push_back(peer_); }
  bool isPointToPoint() const override { return true; }
  int peer() const override { return report_; }
  bool isSend() const override { return send_; }
  int quickKey() const override {
    return (send_ && t_.singleCopy) || t_.bytes > kQuickBytes ? -1 : 2 * report_ + (send_ ? 1 : 0);
  }
  // What the flight recorder keeps of it.
  flight::Call flightCall() const;

 private:
  bool send_ = false;
  int peer_ = 0;
  int report_ = 0;
  shm::Channel::Transfer t_;
};

}  // namespace conflux
