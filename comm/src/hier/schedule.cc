#include "hier/schedule.h"

namespace conflux::hier {

bool NetSchedule::progress(Context&) {
  bool moved = false;
  while (cur_ < steps_.size()) {
    Step& s = steps_[cur_];
    if (!posted_) {
      reqs_.clear();
      for (const Xfer& x : s.xfers) {
        reqs_.push_back(x.send ? env_.transport->postSend(x.peer, x.channel, x.buf, x.bytes, env_.call)
                               : env_.transport->postRecv(x.peer, x.channel, x.buf, x.bytes, env_.call));
      }
      posted_ = true;
      lastMoved_ = 0;
      moved = true;
    }
    bool all = true;
    uint64_t m = 0;
    for (auto& r : reqs_) {
      // One read of the state: a request that fails between a check for failure and a check for
      // completion would otherwise count as finished, and the call return success (4 runs in 341
      // of DifferentCollective on 2+1 under ASan and two CPU hogs).
      const auto state = r->state();
      if (state == net::Request::State::kFailed) throw Error(r->errorStatus(), r->errorMessage() + " (in " + what_ + ")");
      all &= state == net::Request::State::kDone;
      m += r->moved();
    }
    if (m != lastMoved_) {
      lastMoved_ = m;
      moved = true;
    }
    if (!all) return moved;
    if (s.then) s.then();
    ++cur_;
    posted_ = false;
    moved = true;
  }
  return moved;
}

void NetSchedule::waitingAcross(std::vector<int>& ranks) const {
  if (!posted_ || cur_ >= steps_.size()) return;
  for (size_t i = 0; i < reqs_.size(); ++i) {
    if (!reqs_[i]->finished()) ranks.push_back(steps_[cur_].xfers[i].peer);
  }
}

std::string NetSchedule::describe(const Context&) const {
  std::string s = what_ + " step " + std::to_string(cur_ + 1) + "/" + std::to_string(steps_.size());
  if (cur_ >= steps_.size() || !posted_) return s;
  const Step& st = steps_[cur_];
  for (size_t i = 0; i < st.xfers.size() && i < reqs_.size(); ++i) {
    if (reqs_[i]->finished()) continue;
    s += std::string(st.xfers[i].send ? ", sending to " : ", receiving from ") + env_.hosts->describe(st.xfers[i].peer) +
         " (" + std::to_string(reqs_[i]->moved()) + "/" + std::to_string(st.xfers[i].bytes) + " bytes)";
  }
  return s;
}

bool Sequence::progress(Context& ctx) {
  bool moved = false;
  while (cur_ < stages_.size()) {
    moved |= stages_[cur_]->progress(ctx);
    if (!stages_[cur_]->done()) return moved;
    ++cur_;
    moved = true;
  }
  return moved;
}

std::string Sequence::describe(const Context& ctx) const {
  if (cur_ >= stages_.size()) return "finished";
  return "phase " + std::to_string(cur_ + 1) + "/" + std::to_string(stages_.size()) + ": " +
         stages_[cur_]->describe(ctx);
}

void Sequence::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (cur_ < stages_.size()) stages_[cur_]->waitingOn(ctx, ranks);
}

void Sequence::waitingAcross(std::vector<int>& ranks) const {
  if (cur_ < stages_.size()) stages_[cur_]->waitingAcross(ranks);
}

bool Parallel::progress(Context& ctx) {
  bool moved = false;
  for (auto& op : ops_) {
    if (!op->done()) moved |= op->progress(ctx);
  }
  return moved;
}

bool Parallel::done() const {
  for (auto& op : ops_) {
    if (!op->done()) return false;
  }
  return true;
}

void Parallel::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  for (auto& op : ops_) {
    if (!op->done()) op->waitingOn(ctx, ranks);
  }
}

void Parallel::waitingAcross(std::vector<int>& ranks) const {
  for (auto& op : ops_) {
    if (!op->done()) op->waitingAcross(ranks);
  }
}

std::string Parallel::describe(const Context& ctx) const {
  std::string s;
  for (auto& op : ops_) {
    if (op->done()) continue;
    s += (s.empty() ? "" : "; ") + op->describe(ctx);
  }
  return s;
}

int Lanes::add(int lane, std::unique_ptr<Op> op, int after) {
  lanes_[lane].push_back(Item{std::move(op), after});
  return static_cast<int>(lanes_[lane].size()) - 1;
}

bool Lanes::progress(Context& ctx) {
  bool moved = false;
  for (bool again = true; again;) {
    again = false;
    for (int l = 0; l < 2; ++l) {
      while (cur_[l] < lanes_[l].size()) {
        Item& it = lanes_[l][cur_[l]];
        if (it.after >= 0 && cur_[1 - l] <= static_cast<size_t>(it.after)) break;  // dependency pending
        moved |= it.op->progress(ctx);
        if (!it.op->done()) break;
        ++cur_[l];
        moved = again = true;
      }
    }
  }
  return moved;
}

bool Lanes::done() const { return cur_[0] >= lanes_[0].size() && cur_[1] >= lanes_[1].size(); }

std::string Lanes::describe(const Context& ctx) const {
  std::string s;
  for (int l = 0; l < 2; ++l) {
    if (cur_[l] >= lanes_[l].size()) continue;
    s += (s.empty() ? "" : "; ") + std::string(l == 0 ? "in-host " : "network ") + std::to_string(cur_[l] + 1) + "/" +
         std::to_string(lanes_[l].size()) + ": " + lanes_[l][cur_[l]].op->describe(ctx);
  }
  return s;
}

void Lanes::waitingOn(const Context& ctx, std::vector<int>& ranks) const {
  if (cur_[0] < lanes_[0].size()) lanes_[0][cur_[0]].op->waitingOn(ctx, ranks);
}

void Lanes::waitingAcross(std::vector<int>& ranks) const {
  for (int l = 0; l < 2; ++l) {
    if (cur_[l] < lanes_[l].size()) lanes_[l][cur_[l]].op->waitingAcross(ranks);
  }
}

namespace {

class LocalAction final : public Op {
 public:
  explicit LocalAction(std::function<void()> f) : f_(std::move(f)) {}
  bool progress(Context&) override {
    if (!done_) f_();
    done_ = true;
    return true;
  }
  bool done() const override { return done_; }
  std::string describe(const Context&) const override { return "a local copy"; }
  void waitingOn(const Context&, std::vector<int>&) const override {}

 private:
  std::function<void()> f_;
  bool done_ = false;
};

// A point-to-point operation across hosts: one transfer, posted on first progress.
class NetP2p final : public Op {
 public:
  NetP2p(NetEnv env, bool send, void* buf, size_t bytes, int peer)
      : env_(env), send_(send), buf_(buf), bytes_(bytes), peer_(peer) {}
  bool progress(Context&) override {
    bool moved = false;
    if (!req_) {
      req_ = send_ ? env_.transport->postSend(peer_, net::kP2pChannel, buf_, bytes_, net::CallTag{})
                   : env_.transport->postRecv(peer_, net::kP2pChannel, buf_, bytes_, net::CallTag{});
      moved = true;
    }
    if (req_->state() == net::Request::State::kFailed) throw Error(req_->errorStatus(), req_->errorMessage());
    if (req_->moved() != lastMoved_) {
      lastMoved_ = req_->moved();
      moved = true;
    }
    return moved || req_->finished();
  }
  bool done() const override { return req_ && req_->state() == net::Request::State::kDone; }
  std::string describe(const Context&) const override {
    return std::string(send_ ? "Send to " : "Recv from ") + env_.hosts->describe(peer_) + " over " +
           env_.transport->name() + " (" + std::to_string(req_ ? req_->moved() : 0) + "/" + std::to_string(bytes_) +
           " bytes)";
  }
  void waitingOn(const Context&, std::vector<int>&) const override {}
  void waitingAcross(std::vector<int>& ranks) const override {
    if (req_ && !req_->finished()) ranks.push_back(peer_);
  }
  bool isPointToPoint() const override { return true; }
  int peer() const override { return peer_; }
  bool isSend() const override { return send_; }

 private:
  NetEnv env_;
  bool send_;
  void* buf_;
  size_t bytes_;
  int peer_;
  net::RequestPtr req_;
  uint64_t lastMoved_ = 0;
};

}  // namespace

std::unique_ptr<Op> makeLocalAction(std::function<void()> action) { return std::make_unique<LocalAction>(std::move(action)); }

std::unique_ptr<Op> makeNetSend(NetEnv env, const void* buf, size_t bytes, int peer) {
  return std::make_unique<NetP2p>(env, true, const_cast<void*>(buf), bytes, peer);
}
std::unique_ptr<Op> makeNetRecv(NetEnv env, void* buf, size_t bytes, int peer) {
  return std::make_unique<NetP2p>(env, false, buf, bytes, peer);
}

}  // namespace conflux::hier
