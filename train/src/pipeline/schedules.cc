// The schedule generators on fixed orders (GPipe, 1F1B, interleaved 1F1B, and PipeDream and
// PipeDream-2BW on 1F1B's order). Each builds a stage's list from two orders, its forwards and its
// backwards, interleaved as the schedule prescribes; communication is attached to each compute
// action (receive before, send after), so adjacent sends and receives fall into one group. The
// schedules whose order comes from a simulated timeline (ZB-H1, 1F1B-RR) are in timeline.cc.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conflux/train/pipeline/schedule.h"

namespace conflux::train::pipeline {
namespace {

void checkShape(const char* what, int p, int m, int v) {
  if (p < 1 || m < 1 || v < 1) {
    throw Error(cfxInvalidArgument, std::string(what) + ": stages, micro-batches and chunks must be positive (got p=" +
                                        std::to_string(p) + ", m=" + std::to_string(m) + ", v=" + std::to_string(v) + ")");
  }
}

struct Builder {
  Schedule& s;
  int stage;
  void forward(int mb, int vs) {
    auto& a = s.actions[static_cast<size_t>(stage)];
    if (vs > 0) a.push_back({Op::kRecvActivation, mb, vs});
    a.push_back({Op::kForward, mb, vs});
    if (vs + 1 < s.virtualStages()) a.push_back({Op::kSendActivation, mb, vs});
  }
  void backward(int mb, int vs) {
    auto& a = s.actions[static_cast<size_t>(stage)];
    if (vs + 1 < s.virtualStages()) a.push_back({Op::kRecvGradient, mb, vs});
    a.push_back({Op::kBackward, mb, vs});
    if (vs > 0) a.push_back({Op::kSendGradient, mb, vs});
  }
};

Schedule empty(std::string name, int p, int m, int v) {
  Schedule s;
  s.name = std::move(name);
  s.stages = p;
  s.microbatches = m;
  s.chunks = v;
  s.actions.resize(static_cast<size_t>(p));
  return s;
}

// 1F1B's order on every stage: warm-up forwards, then forward and backward in turn, then the
// remaining backwards; `b` emits each with its communication (and, asynchronous, its versions).
template <typename B>
void oneFOneBOrder(int p, int m, int st, B& b) {
  const int warmup = std::min(p - st - 1, m);
  for (int mb = 0; mb < warmup; ++mb) b.forward(mb, st);
  for (int k = 0; k < m - warmup; ++k) {  // steady state: forward warmup + k, backward k
    b.forward(warmup + k, st);
    b.backward(k, st);
  }
  for (int mb = m - warmup; mb < m; ++mb) b.backward(mb, st);
}

// The asynchronous variants: each forward is stamped with the version `versionOf` picks, its
// backward with the same, and a kUpdate follows each backward that `updateAfter` names.
template <typename VersionOf, typename UpdateAfter>
struct AsyncBuilder {
  Builder b;
  VersionOf versionOf;
  UpdateAfter updateAfter;
  int made = 0;
  std::vector<int> used;
  void forward(int mb, int vs) {
    b.forward(mb, vs);
    used[static_cast<size_t>(mb)] = versionOf(mb, made);
    list()[list().size() - (vs + 1 < b.s.virtualStages() ? 2 : 1)].version = used[static_cast<size_t>(mb)];
  }
  void backward(int mb, int vs) {
    b.backward(mb, vs);
    auto& a = list();
    Action& bwd = a[a.size() - (vs > 0 ? 2 : 1)];
    bwd.version = used[static_cast<size_t>(mb)];
    if (updateAfter(mb)) {
      // Right after the backward, before its gradient goes out: the update is local unless the
      // stage is replicated, and keeps the send in the group with the next receive.
      a.insert(a.end() - (vs > 0 ? 1 : 0), Action{Op::kUpdate, 0, vs, ++made});
    }
  }
  std::vector<Action>& list() { return b.s.actions[static_cast<size_t>(b.stage)]; }
};

template <typename VersionOf, typename UpdateAfter>
Schedule asyncOneFOneB(std::string name, int p, int m, VersionOf versionOf, UpdateAfter updateAfter) {
  Schedule s = empty(std::move(name), p, m, 1);
  for (int st = 0; st < p; ++st) {
    AsyncBuilder<VersionOf, UpdateAfter> b{Builder{s, st}, versionOf, updateAfter, 0, std::vector<int>(static_cast<size_t>(m), 0)};
    oneFOneBOrder(p, m, st, b);
  }
  return s;
}

}  // namespace

Schedule gpipe(int p, int m) {
  checkShape("gpipe", p, m, 1);
  Schedule s = empty("GPipe", p, m, 1);
  for (int st = 0; st < p; ++st) {
    Builder b{s, st};
    for (int mb = 0; mb < m; ++mb) b.forward(mb, st);
    for (int mb = 0; mb < m; ++mb) b.backward(mb, st);
  }
  return s;
}

Schedule oneFOneB(int p, int m) {
  checkShape("oneFOneB", p, m, 1);
  Schedule s = empty("1F1B", p, m, 1);
  for (int st = 0; st < p; ++st) {
    Builder b{s, st};
    oneFOneBOrder(p, m, st, b);
  }
  return s;
}

Schedule pipeDream(int p, int m) {
  checkShape("pipeDream", p, m, 1);
  return asyncOneFOneB("PipeDream", p, m, [](int, int made) { return made; }, [](int) { return true; });
}

Schedule pipeDream2BW(int p, int m, int batch) {
  checkShape("pipeDream2BW", p, m, 1);
  if (batch < p) {
    throw Error(cfxInvalidArgument, "pipeDream2BW: a batch of " + std::to_string(batch) + " micro-batches is fewer than the " +
                                        std::to_string(p) + " stages (2BW needs batch >= stages to hold two versions)");
  }
  return asyncOneFOneB("PipeDream-2BW (batch " + std::to_string(batch) + ")", p, m,
                       [batch](int mb, int) { return std::max(mb / batch - 1, 0); },
                       [batch, m](int mb) { return (mb + 1) % batch == 0 || mb + 1 == m; });
}


// Megatron's placement: the inputs of the next forward and the next backward are received in
// the same group that sends the outputs of the forward and backward just done, so no stage ever
// waits on a receive it has not yet posted (including sends to itself when p = 1).
class Emitter {
 public:
  Emitter(Schedule& s, int stage) : s_(s), list_(s.actions[static_cast<size_t>(stage)]) {}
  struct Compute {
    bool forward;
    int mb, vs;
  };
  void recvFor(const Compute& c) {
    if (c.forward && c.vs > 0 && haveAct_.insert({c.mb, c.vs}).second) group_.push_back({Op::kRecvActivation, c.mb, c.vs});
    if (!c.forward && c.vs + 1 < s_.virtualStages() && haveGrad_.insert({c.mb, c.vs}).second) {
      group_.push_back({Op::kRecvGradient, c.mb, c.vs});
    }
  }
  bool received(const Compute& c) const {
    if (c.forward) return c.vs == 0 || haveAct_.count({c.mb, c.vs}) > 0;
    return c.vs + 1 == s_.virtualStages() || haveGrad_.count({c.mb, c.vs}) > 0;
  }
  void sendOut(const Compute& c) {
    if (c.forward && c.vs + 1 < s_.virtualStages()) group_.push_back({Op::kSendActivation, c.mb, c.vs});
    if (!c.forward && c.vs > 0) group_.push_back({Op::kSendGradient, c.mb, c.vs});
  }
  void compute(const Compute& c) {
    recvFor(c);
    flush();
    list_.push_back({c.forward ? Op::kForward : Op::kBackward, c.mb, c.vs});
  }
  void flush() {
    list_.insert(list_.end(), group_.begin(), group_.end());
    group_.clear();
  }

 private:
  Schedule& s_;
  std::vector<Action>& list_;
  std::vector<Action> group_;
  std::set<std::pair<int, int>> haveAct_, haveGrad_;
};

Schedule interleaved1F1B(int p, int m, int v) {
  checkShape("interleaved1F1B", p, m, v);
  if (m % p != 0) {
    throw Error(cfxInvalidArgument, "interleaved1F1B: micro-batches (" + std::to_string(m) +
                                        ") must be a multiple of stages (" + std::to_string(p) + ")");
  }
  Schedule s = empty("interleaved 1F1B (v=" + std::to_string(v) + ")", p, m, v);
  const int total = m * v;
  for (int st = 0; st < p; ++st) {
    // The k-th forward (backward) of a stage: micro-batches go in groups of p through each chunk
    // in turn (backward: chunks in reverse).
    auto op = [&](int k, bool forward) {
      int c = (k / p) % v;
      return Emitter::Compute{forward, (k / (p * v)) * p + k % p, (forward ? c : v - 1 - c) * p + st};
    };
    Emitter e(s, st);
    const int warmup = (m == p) ? total : std::min(total, (p - st - 1) * 2 + (v - 1) * p);
    for (int k = 0; k < warmup; ++k) {
      e.compute(op(k, true));
      e.sendOut(op(k, true));
      if (k + 1 < total) e.recvFor(op(k + 1, true));
      if (k + 1 == warmup && warmup < total) e.recvFor(op(0, false));
    }
    for (int k = 0; k < total - warmup; ++k) {
      const Emitter::Compute f = op(warmup + k, true), b = op(k, false);
      e.compute(f);
      const bool sendFirst = !e.received(b);  // no prefetched gradient: 1F1B's pairing instead
      if (sendFirst) e.sendOut(f);
      e.compute(b);
      if (!sendFirst) e.sendOut(f);
      e.sendOut(b);
      if (warmup + k + 1 < total) e.recvFor(op(warmup + k + 1, true));
      if (k + 1 < total) e.recvFor(op(k + 1, false));
    }
    for (int k = total - warmup; k < total; ++k) {
      e.compute(op(k, false));
      e.sendOut(op(k, false));
      if (k + 1 < total) e.recvFor(op(k + 1, false));
    }
    e.flush();
  }
  return s;
}

}  // namespace conflux::train::pipeline
