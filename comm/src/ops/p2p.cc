#include "ops/p2p.h"

namespace conflux {

P2pOp P2pOp::send(const void* buf, size_t bytes, int peer, int reportPeer, bool singleCopy) {
  P2pOp op;
  op.send_ = true;
  op.peer_ = peer;
  op.report_ = reportPeer;
  op.t_.data = static_cast<std::byte*>(const_cast<void*>(buf));
  op.t_.bytes = bytes;
  op.t_.singleCopy = singleCopy;
  return op;
}

P2pOp P2pOp::recv(void* buf, size_t bytes, int peer, int reportPeer) {
  P2pOp op;
  op.peer_ = peer;
  op.report_ = reportPeer;
  op.t_.data = static_cast<std::byte*>(buf);
  op.t_.bytes = bytes;
  return op;
}

bool P2pOp::progress(Context& ctx) {
  if (send_) {
    if (!ctx.sendChannel(peer_).progressSend(t_)) return false;
    ctx.oweRing();
    return true;
  }
  if (!ctx.recvChannel(peer_).progressRecv(t_, report_, ctx.commRank(ctx.rank()), ctx.pid(peer_))) return false;
  if (t_.wakeSender) ctx.ring(peer_);
  return true;
}

std::string P2pOp::describe(const Context&) const {
  return std::string(send_ ? "Send to rank " : "Recv from rank ") + std::to_string(report_) + " (" +
         std::to_string(t_.done) + "/" + std::to_string(t_.bytes) + (send_ ? " bytes consumed)" : " bytes received)");
}

flight::Call P2pOp::flightCall() const {
  return flight::Call{send_ ? "Send" : "Recv", t_.bytes, -1, -1, report_, true, !send_};
}

std::unique_ptr<Op> makeSend(const void* buf, size_t bytes, int peer, int reportPeer, bool singleCopy) {
  return std::make_unique<P2pOp>(P2pOp::send(buf, bytes, peer, reportPeer < 0 ? peer : reportPeer, singleCopy));
}
std::unique_ptr<Op> makeRecv(void* buf, size_t bytes, int peer, int reportPeer) {
  return std::make_unique<P2pOp>(P2pOp::recv(buf, bytes, peer, reportPeer < 0 ? peer : reportPeer));
}

}  // namespace conflux
