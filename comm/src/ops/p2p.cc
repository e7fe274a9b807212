// Send and Recv over the shared-memory channel of the (sender, receiver) pair; a large send may
// offer its buffer for a single copy (transport/shm/channel.h).
#include "ops/op.h"

namespace conflux {

namespace {

class SendOp : public Op {
 public:
  SendOp(const void* buf, size_t bytes, int peer, int reportPeer, bool singleCopy) : peer_(peer), report_(reportPeer) {
    t_.data = static_cast<std::byte*>(const_cast<void*>(buf));
    t_.bytes = bytes;
    t_.singleCopy = singleCopy;
  }
  bool progress(Context& ctx) override {
    if (!ctx.sendChannel(peer_).progressSend(t_)) return false;
    ctx.ring(peer_);
    return true;
  }
  bool done() const override { return t_.complete(); }
  std::string describe(const Context&) const override {
    return "Send to rank " + std::to_string(report_) + " (" + std::to_string(t_.done) + "/" + std::to_string(t_.bytes) +
           " bytes consumed)";
  }
  void waitingOn(const Context&, std::vector<int>& ranks) const override { ranks.push_back(peer_); }
  bool isPointToPoint() const override { return true; }
  int peer() const override { return report_; }
  bool isSend() const override { return true; }

 private:
  int peer_;    // local rank: the channel
  int report_;  // communicator rank, for messages and the executor's per-peer ordering
  shm::Channel::Transfer t_;
};

class RecvOp : public Op {
 public:
  RecvOp(void* buf, size_t bytes, int peer, int reportPeer) : peer_(peer), report_(reportPeer) {
    t_.data = static_cast<std::byte*>(buf);
    t_.bytes = bytes;
  }
  bool progress(Context& ctx) override {
    if (!ctx.recvChannel(peer_).progressRecv(t_, report_, ctx.commRank(ctx.rank()), ctx.pid(peer_))) return false;
    if (t_.wakeSender) ctx.ring(peer_);
    return true;
  }
  bool done() const override { return t_.complete(); }
  std::string describe(const Context&) const override {
    return "Recv from rank " + std::to_string(report_) + " (" + std::to_string(t_.done) + "/" +
           std::to_string(t_.bytes) + " bytes received)";
  }
  void waitingOn(const Context&, std::vector<int>& ranks) const override { ranks.push_back(peer_); }
  bool isPointToPoint() const override { return true; }
  int peer() const override { return report_; }

 private:
  int peer_;    // local rank: the channel
  int report_;  // communicator rank, for messages and the executor's per-peer ordering
  shm::Channel::Transfer t_;
};

}  // namespace

std::unique_ptr<Op> makeSend(const void* buf, size_t bytes, int peer, int reportPeer, bool singleCopy) {
  return std::make_unique<SendOp>(buf, bytes, peer, reportPeer < 0 ? peer : reportPeer, singleCopy);
}
std::unique_ptr<Op> makeRecv(void* buf, size_t bytes, int peer, int reportPeer) {
  return std::make_unique<RecvOp>(buf, bytes, peer, reportPeer < 0 ? peer : reportPeer);
}

}  // namespace conflux
