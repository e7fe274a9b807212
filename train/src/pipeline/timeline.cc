// Schedules whose order comes from a simulated timeline rather than a fixed pattern: ZB-H1 (where
// each stage's deferred weight gradients go depends on when its gradients arrive) and 1F1B-RR
// (where replicated stages take every r-th micro-batch). Every worker greedily runs, at each unit
// of time, a backward whose output gradient has arrived, else the next forward whose input has
// arrived while it holds fewer micro-batches than its limit (from forward to backward; 1F1B's
// p - s), else a deferred weight gradient. ZB-H1 also runs a weight gradient instead of a forward
// once p of them wait: with that bound the bubble is ZB-H1's (p - 1) units of (p - 1)(F + B - W),
// a third of 1F1B's, for m >= p, and the deferred weight gradients do not grow with m.
//
// The timeline becomes action lists by time: at each instant a worker posts one group with the
// sends of the op it just finished and the receives of what its neighbours just sent, then its
// updates (a replicated stage's replicas all complete theirs at the same instant), then the op it
// starts. A sender's group and its receiver's are at the same instant, so ordering every list by
// instant cannot deadlock (the earliest blocked item would have every partner posted); the
// validator checks it anyway.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "conflux/train/pipeline/schedule.h"

namespace conflux::train::pipeline {
namespace {

struct Spec {
  std::string name;
  int p = 1, m = 1;
  std::vector<int> replicas;  // empty: one worker per stage
  bool split = false;         // Bi + W instead of B
  int batch = 0;              // 0: no updates; else 2BW's update every `batch` micro-batches
};

// One item of a worker's list: at `time`, of `kind` (0 group, 1 update, 2 compute).
struct Item {
  long time;
  int kind;
  Action action;
};

struct Worker {
  int stage = 0;
  std::vector<int> mbs;  // its micro-batches, in order
  size_t nextForward = 0;
  int limit = 1, held = 0, updates = 0;
  long busyUntil = 0;
  bool atUpdate = false;
  Action running{Op::kForward, -1, 0};
  std::set<int> actIn, gradIn, awaitingBackward;  // arrived inputs; forwards done, backward not
  std::vector<int> awaitingWeight;                // split: input halves done, weight halves not, FIFO
  std::map<int, int> version;                     // mb -> weight version of its forward
  std::vector<Item> items;
  int remaining = 0;  // compute ops left
};

int versionOf(const Spec& s, int mb) { return s.batch == 0 ? 0 : std::max(mb / s.batch - 1, 0); }

// The last micro-batch of mb's batch that `w` runs: its backward is followed by the update.
bool endsShare(const Spec& s, const Worker& w, int mb) {
  if (s.batch == 0) return false;
  const int batchEnd = std::min((mb / s.batch + 1) * s.batch, s.m);
  auto it = std::upper_bound(w.mbs.begin(), w.mbs.end(), mb);
  return it == w.mbs.end() || *it >= batchEnd;
}

Schedule simulate(const Spec& spec) {
  Schedule s;
  s.name = spec.name;
  s.stages = spec.p;
  s.microbatches = spec.m;
  s.replicas = spec.replicas;
  const int nw = s.workers();
  std::vector<Worker> ws(static_cast<size_t>(nw));
  for (int w = 0; w < nw; ++w) {
    Worker& k = ws[static_cast<size_t>(w)];
    k.stage = s.stageOfWorker(w);
    const int r = s.replicasOf(k.stage), replica = w - s.firstWorker(k.stage);
    for (int mb = replica; mb < spec.m; mb += r) k.mbs.push_back(mb);
    // 1F1B's limit: as many micro-batches as there are workers from here to the end, per replica.
    int downstream = 0;
    for (int st = k.stage; st < spec.p; ++st) downstream += s.replicasOf(st);
    k.limit = (downstream + r - 1) / r;
    k.remaining = static_cast<int>(k.mbs.size()) * (spec.split ? 3 : 2);
  }
  auto cost = [](Op op) { return op == Op::kBackward ? 2L : 1L; };
  auto send = [&](Worker& from, Op op, int mb, long t) {
    const int vs = from.stage;
    const bool act = op == Op::kForward;
    if (act ? vs + 1 >= spec.p : vs == 0) return;
    const int to = s.workerOf(act ? vs + 1 : vs - 1, mb);
    from.items.push_back({t, 0, {act ? Op::kSendActivation : Op::kSendGradient, mb, vs}});
    Worker& dst = ws[static_cast<size_t>(to)];
    dst.items.push_back({t, 0, {act ? Op::kRecvActivation : Op::kRecvGradient, mb, dst.stage}});
    (act ? dst.actIn : dst.gradIn).insert(mb);
  };
  std::map<int, std::vector<int>> waiting;  // stage -> workers at their update
  const long horizon = 8L * (3L * spec.m + spec.p) + 16;
  for (long t = 0;; ++t) {
    if (t > horizon) throw Error(cfxInternalError, spec.name + ": the timeline did not finish");
    // 1. Ops ending now send their results and may reach an update.
    for (int w = 0; w < nw; ++w) {
      Worker& k = ws[static_cast<size_t>(w)];
      if (k.running.microbatch < 0 || k.busyUntil != t) continue;
      const Action a = k.running;
      k.running.microbatch = -1;
      if (a.op == Op::kForward) send(k, Op::kForward, a.microbatch, t);
      if (a.op == Op::kBackward || a.op == Op::kBackwardInput) send(k, Op::kBackward, a.microbatch, t);
      if (a.op == Op::kBackward && endsShare(spec, k, a.microbatch)) {
        k.atUpdate = true;
        waiting[k.stage].push_back(w);
      }
    }
    // 2. Updates complete when every replica of the stage is there.
    for (auto it = waiting.begin(); it != waiting.end();) {
      if (static_cast<int>(it->second.size()) < s.replicasOf(it->first)) {
        ++it;
        continue;
      }
      for (int w : it->second) {
        Worker& k = ws[static_cast<size_t>(w)];
        k.atUpdate = false;
        k.items.push_back({t, 1, {Op::kUpdate, 0, k.stage, ++k.updates}});
      }
      it = waiting.erase(it);
    }
    // 3. Idle workers start their next op.
    bool left = false;
    for (int w = 0; w < nw; ++w) {
      Worker& k = ws[static_cast<size_t>(w)];
      left = left || k.remaining > 0 || k.atUpdate || k.running.microbatch >= 0;
      if (k.atUpdate || k.busyUntil > t || k.remaining == 0) continue;
      const bool last = k.stage + 1 == spec.p;
      Action next{Op::kForward, -1, k.stage};
      for (int mb : k.awaitingBackward) {
        if (last || k.gradIn.count(mb)) {
          next = {spec.split ? Op::kBackwardInput : Op::kBackward, mb, k.stage, k.version[mb]};
          break;
        }
      }
      const bool roomForWeights = static_cast<int>(k.awaitingWeight.size()) < spec.p;
      if (next.microbatch < 0 && k.nextForward < k.mbs.size() && k.held < k.limit && roomForWeights) {
        const int mb = k.mbs[k.nextForward];
        if ((k.stage == 0 || k.actIn.count(mb)) && versionOf(spec, mb) <= k.updates) {
          next = {Op::kForward, mb, k.stage, versionOf(spec, mb)};
        }
      }
      if (next.microbatch < 0 && !k.awaitingWeight.empty()) {
        const int mb = k.awaitingWeight.front();
        next = {Op::kBackwardWeight, mb, k.stage, k.version[mb]};
      }
      if (next.microbatch < 0) continue;
      switch (next.op) {
        case Op::kForward:
          ++k.nextForward;
          ++k.held;
          k.version[next.microbatch] = next.version;
          k.awaitingBackward.insert(next.microbatch);
          break;
        case Op::kBackwardWeight:
          k.awaitingWeight.erase(k.awaitingWeight.begin());
          break;
        default:
          k.awaitingBackward.erase(next.microbatch);
          --k.held;
          if (next.op == Op::kBackwardInput) k.awaitingWeight.push_back(next.microbatch);
          break;
      }
      k.items.push_back({t, 2, next});
      k.running = next;
      k.busyUntil = t + cost(next.op);
      --k.remaining;
    }
    if (!left) break;
  }
  s.actions.resize(static_cast<size_t>(nw));
  for (int w = 0; w < nw; ++w) {
    auto& items = ws[static_cast<size_t>(w)].items;
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return std::tie(a.time, a.kind) < std::tie(b.time, b.kind); });
    for (const Item& it : items) s.actions[static_cast<size_t>(w)].push_back(it.action);
  }
  return s;
}

}  // namespace

Schedule zeroBubbleH1(int p, int m) {
  if (p < 1 || m < 1) {
    throw Error(cfxInvalidArgument, "zeroBubbleH1: stages and micro-batches must be positive (got p=" + std::to_string(p) +
                                        ", m=" + std::to_string(m) + ")");
  }
  Spec spec;
  spec.name = "ZB-H1";
  spec.p = p;
  spec.m = m;
  spec.split = true;
  return simulate(spec);
}

Schedule oneFOneBRR(std::vector<int> replicas, int m, int batch) {
  const int p = static_cast<int>(replicas.size());
  std::string shape;
  for (int r : replicas) shape += (shape.empty() ? "" : ",") + std::to_string(r);
  if (p < 1 || m < 1 || batch < 1 || std::any_of(replicas.begin(), replicas.end(), [](int r) { return r < 1; })) {
    throw Error(cfxInvalidArgument, "oneFOneBRR: replicas {" + shape + "}, micro-batches " + std::to_string(m) + " and batch " +
                                        std::to_string(batch) + " must all be positive");
  }
  for (int r : replicas) {
    if (batch % r != 0) {
      throw Error(cfxInvalidArgument, "oneFOneBRR: batch " + std::to_string(batch) + " is not a multiple of replica count " +
                                          std::to_string(r) + " (each replica must take the same share of a batch)");
    }
  }
  if (batch < p) {
    throw Error(cfxInvalidArgument, "oneFOneBRR: a batch of " + std::to_string(batch) + " micro-batches is fewer than the " +
                                        std::to_string(p) + " stages (2BW needs batch >= stages to hold two versions)");
  }
  Spec spec;
  spec.name = "1F1B-RR {" + shape + "} (batch " + std::to_string(batch) + ")";
  spec.p = p;
  spec.m = m;
  spec.replicas = std::move(replicas);
  spec.batch = batch;
  return simulate(spec);
}

}  // namespace conflux::train::pipeline
