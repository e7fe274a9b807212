// The schedule validator: static matching of sends and receives, a check of weight versions, then
// a simulation of every worker in lock-free time units (forward 1, backward 2, or 1 for each half
// of a split backward; updates and communication free) under rendezvous semantics. The simulation
// finds order errors (a forward before its input arrives, a backward before its forward),
// deadlocks (no worker can move), the makespan and bubble, and how many forwards each worker
// holds at once (from forward to backward, or to its input half) and how many weight halves wait.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "conflux/train/pipeline/schedule.h"

namespace conflux::train::pipeline {
namespace {

bool isComm(Op op) { return isCommunication(op); }
bool isSend(Op op) { return op == Op::kSendActivation || op == Op::kSendGradient; }
long costOf(Op op) {
  switch (op) {
    case Op::kForward:
    case Op::kBackwardInput:
    case Op::kBackwardWeight: return 1;
    case Op::kBackward: return 2;
    default: return 0;
  }
}

// A transfer: activations (vs -> vs + 1) or gradients (vs -> vs - 1) of one micro-batch, named by
// the sending virtual stage.
using Key = std::tuple<bool, int, int>;  // (gradient, micro-batch, sender's virtual stage)

Key keyOf(const Action& a) {
  switch (a.op) {
    case Op::kSendActivation: return {false, a.microbatch, a.vstage};
    case Op::kRecvActivation: return {false, a.microbatch, a.vstage - 1};
    case Op::kSendGradient: return {true, a.microbatch, a.vstage};
    default: return {true, a.microbatch, a.vstage + 1};
  }
}

// The virtual stage at the other end of a send or receive.
int peerVstage(const Action& a) {
  return a.op == Op::kSendActivation || a.op == Op::kRecvGradient ? a.vstage + 1 : a.vstage - 1;
}

std::string workerName(const Schedule& s, int worker) {
  if (s.replicas.empty()) return "stage " + std::to_string(worker);
  const int st = s.stageOfWorker(worker);
  return "stage " + std::to_string(st) + " replica " + std::to_string(worker - s.firstWorker(st));
}

[[noreturn]] void fail(const Schedule& s, int worker, const Action& a, const std::string& why) {
  throw Error(cfxInvalidUsage, s.name + ": " + workerName(s, worker) + ", " + describe(s, a) + ": " + why);
}

struct Side {
  bool posted = false;
  long time = 0;
};

void checkShape(const Schedule& s) {
  bool ok = s.stages >= 1 && s.microbatches >= 1 && s.chunks >= 1;
  ok = ok && (s.replicas.empty() || static_cast<int>(s.replicas.size()) == s.stages);
  for (int r : s.replicas) ok = ok && r >= 1;
  if (!ok || static_cast<int>(s.actions.size()) != s.workers()) {
    throw Error(cfxInvalidArgument, s.name + ": malformed schedule (stages, micro-batches, chunks, replicas or action lists)");
  }
}

// Ranges, placement, exactly one receive per send, every (micro-batch, virtual stage) computed once.
void checkStatic(const Schedule& s) {
  const int m = s.microbatches, nv = s.virtualStages();
  std::map<Key, std::pair<int, int>> count;  // key -> (sends, receives)
  std::map<std::tuple<Op, int, int>, int> computed;
  std::map<int, std::vector<int>> updates;  // stage -> updates per replica
  for (int w = 0; w < s.workers(); ++w) {
    const int stage = s.stageOfWorker(w);
    int made = 0;
    for (const Action& a : s.actions[static_cast<size_t>(w)]) {
      if (a.microbatch < 0 || a.microbatch >= m || a.vstage < 0 || a.vstage >= nv) fail(s, w, a, "out of range");
      if (s.stageOf(a.vstage) != stage) fail(s, w, a, "virtual stage belongs to stage " + std::to_string(s.stageOf(a.vstage)));
      if (a.op == Op::kUpdate) {
        if (a.version != ++made) fail(s, w, a, "is update " + std::to_string(made) + " of this worker but makes version " + std::to_string(a.version));
        continue;
      }
      if (s.workerOf(a.vstage, a.microbatch) != w) fail(s, w, a, "belongs to " + workerName(s, s.workerOf(a.vstage, a.microbatch)));
      if ((a.op == Op::kRecvActivation || a.op == Op::kSendGradient) && a.vstage == 0) fail(s, w, a, "the first virtual stage has no predecessor");
      if ((a.op == Op::kSendActivation || a.op == Op::kRecvGradient) && a.vstage == nv - 1) fail(s, w, a, "the last virtual stage has no successor");
      if (isComm(a.op)) {
        auto& c = count[keyOf(a)];
        (isSend(a.op) ? c.first : c.second)++;
      } else if (++computed[{a.op, a.microbatch, a.vstage}] > 1) {
        fail(s, w, a, "appears twice");
      }
    }
    updates[stage].push_back(made);
  }
  for (const auto& [stage, made] : updates) {
    if (std::adjacent_find(made.begin(), made.end(), std::not_equal_to<>()) != made.end()) {
      throw Error(cfxInvalidUsage, s.name + ": the replicas of stage " + std::to_string(stage) + " make different numbers of updates");
    }
  }
  for (int w = 0; w < s.workers(); ++w) {
    for (const Action& a : s.actions[static_cast<size_t>(w)]) {
      if (!isComm(a.op)) continue;
      auto [sends, recvs] = count[keyOf(a)];
      if (isSend(a.op) && recvs != 1) fail(s, w, a, recvs == 0 ? "no matching receive" : "several matching receives");
      if (!isSend(a.op) && sends != 1) fail(s, w, a, sends == 0 ? "no matching send" : "several matching sends");
    }
  }
  for (int mb = 0; mb < m; ++mb) {
    for (int vs = 0; vs < nv; ++vs) {
      auto has = [&](Op op) { return computed.count({op, mb, vs}) > 0; };
      const char* missing = !has(Op::kForward) ? "forward"
                            : has(Op::kBackward) ? (has(Op::kBackwardInput) || has(Op::kBackwardWeight) ? "single backward (it also has a split one)" : nullptr)
                            : !has(Op::kBackwardInput) ? "backward"
                            : !has(Op::kBackwardWeight) ? "weight-gradient backward"
                                                        : nullptr;
      if (missing != nullptr) {
        throw Error(cfxInvalidUsage, s.name + ": micro-batch " + std::to_string(mb) + " has no " + missing +
                                         " on virtual stage " + std::to_string(vs) + " (stage " + std::to_string(s.stageOf(vs)) + ")");
      }
    }
  }
}

// Weight versions on one worker: a forward's version exists when it runs (no newer than the
// updates so far), its backward uses the same; returns the most versions needed at once (the
// latest, those of micro-batches in flight, and older ones that later forwards still use).
int checkVersions(const Schedule& s, int w) {
  const auto& list = s.actions[static_cast<size_t>(w)];
  std::map<std::pair<int, int>, int> inFlight;  // (mb, vs) -> version, from forward to its last backward part
  std::multiset<int> laterForwards;
  for (const Action& a : list) {
    if (a.op == Op::kForward) laterForwards.insert(a.version);
  }
  int latest = 0, peak = 1;
  for (const Action& a : list) {
    if (a.op == Op::kUpdate) {
      latest = a.version;
    } else if (a.op == Op::kForward) {
      if (a.version < 0 || a.version > latest) {
        fail(s, w, a, "uses weight version " + std::to_string(a.version) + " but the latest is " + std::to_string(latest));
      }
      laterForwards.erase(laterForwards.find(a.version));
      inFlight[{a.microbatch, a.vstage}] = a.version;
    } else if (isCompute(a.op)) {
      auto it = inFlight.find({a.microbatch, a.vstage});
      if (it == inFlight.end()) continue;  // before its forward: the simulation names it
      if (a.version != it->second) {
        fail(s, w, a, "uses weight version " + std::to_string(a.version) + " but its forward used " + std::to_string(it->second));
      }
      if (a.op != Op::kBackwardInput) inFlight.erase(it);
    }
    std::set<int> needed{latest};
    for (const auto& [cell, v] : inFlight) needed.insert(v);
    for (int v : laterForwards) {
      if (v <= latest) needed.insert(v);
    }
    peak = std::max(peak, static_cast<int>(needed.size()));
  }
  return peak;
}

// Conflux (like NCCL) matches the sends and receives between two ranks in the order they are
// posted, so each worker must receive from a peer in the order that peer sends (a schedule that
// passes the simulation can still cross messages inside a group).
void checkMessageOrder(const Schedule& s) {
  std::map<std::pair<int, int>, std::vector<const Action*>> sent, received;  // (from, to)
  for (int w = 0; w < s.workers(); ++w) {
    for (const Action& a : s.actions[static_cast<size_t>(w)]) {
      if (!isComm(a.op)) continue;
      const int peer = s.workerOf(peerVstage(a), a.microbatch);
      (isSend(a.op) ? sent[{w, peer}] : received[{peer, w}]).push_back(&a);
    }
  }
  for (const auto& [pair, sends] : sent) {
    const auto& recvs = received[pair];
    for (size_t k = 0; k < sends.size() && k < recvs.size(); ++k) {
      if (keyOf(*sends[k]) != keyOf(*recvs[k])) {
        fail(s, pair.first, *sends[k],
             "is the sender's message " + std::to_string(k) + " to " + workerName(s, pair.second) + ", but that " +
                 (s.replicas.empty() ? "stage" : "worker") + "'s receive " + std::to_string(k) + " from it is " +
                 describe(s, *recvs[k]) + " (messages between two stages match in the order they are posted)");
      }
    }
  }
}

}  // namespace

int Schedule::workers() const {
  if (replicas.empty()) return stages;
  int n = 0;
  for (int r : replicas) n += r;
  return n;
}

int Schedule::firstWorker(int stage) const {
  if (replicas.empty()) return stage;
  int w = 0;
  for (int st = 0; st < stage; ++st) w += replicas[static_cast<size_t>(st)];
  return w;
}

int Schedule::stageOfWorker(int worker) const {
  if (replicas.empty()) return worker;
  int st = 0;
  while (st + 1 < stages && firstWorker(st + 1) <= worker) ++st;
  return st;
}

std::string describe(const Schedule& s, const Action& a) {
  std::string mb = "mb " + std::to_string(a.microbatch) + ", vs " + std::to_string(a.vstage);
  if (a.version != 0 && a.op != Op::kUpdate) mb += ", version " + std::to_string(a.version);
  const int nv = s.virtualStages();
  auto peer = [&](const char* arrow) {
    const int vs = peerVstage(a);
    if (vs < 0 || vs >= nv || a.microbatch < 0) return std::string(arrow) + "nobody";
    return std::string(arrow) + workerName(s, s.workerOf(vs, a.microbatch));
  };
  switch (a.op) {
    case Op::kForward: return "F(" + mb + ")";
    case Op::kBackward: return "B(" + mb + ")";
    case Op::kBackwardInput: return "Bi(" + mb + ")";
    case Op::kBackwardWeight: return "W(" + mb + ")";
    case Op::kUpdate: return "update(to version " + std::to_string(a.version) + ")";
    case Op::kSendActivation: return "send-act(" + mb + peer(" -> ") + ")";
    case Op::kRecvActivation: return "recv-act(" + mb + peer(" <- ") + ")";
    case Op::kSendGradient: return "send-grad(" + mb + peer(" -> ") + ")";
    case Op::kRecvGradient: return "recv-grad(" + mb + peer(" <- ") + ")";
  }
  return "?";
}

ScheduleReport validate(const Schedule& s) {
  checkShape(s);
  checkStatic(s);
  const int nw = s.workers(), m = s.microbatches, nv = s.virtualStages();
  ScheduleReport report;
  for (int w = 0; w < nw; ++w) report.peakVersions.push_back(checkVersions(s, w));

  // Simulation.
  std::map<std::pair<Key, bool>, Side> sides;  // (transfer, is-send) -> posted?
  std::map<std::pair<int, int>, std::pair<int, long>> updates;  // (stage, version) -> (replicas there, latest arrival)
  const size_t cells = static_cast<size_t>(m) * static_cast<size_t>(nv);
  auto cell = [&](const Action& a) { return static_cast<size_t>(a.microbatch) * static_cast<size_t>(nv) + static_cast<size_t>(a.vstage); };
  std::vector<long> fwdDone(cells, -1), inputGradDone(cells, -1), actIn(cells, -1), gradIn(cells, -1);
  std::vector<size_t> pc(static_cast<size_t>(nw), 0);
  std::vector<char> atUpdate(static_cast<size_t>(nw), 0);
  std::vector<long> clock(static_cast<size_t>(nw), 0);
  std::vector<int> held(static_cast<size_t>(nw), 0), deferred(static_cast<size_t>(nw), 0);
  report.peakActivations.assign(static_cast<size_t>(nw), 0);
  report.peakDeferredWeights.assign(static_cast<size_t>(nw), 0);
  long busy = 0;
  auto groupEnd = [&](int w, size_t from) {
    const auto& list = s.actions[static_cast<size_t>(w)];
    size_t e = from;
    while (e < list.size() && isComm(list[e].op)) ++e;
    return e;
  };
  for (;;) {
    bool progress = false, finished = true;
    for (int w = 0; w < nw; ++w) {
      const auto& list = s.actions[static_cast<size_t>(w)];
      size_t& i = pc[static_cast<size_t>(w)];
      long& t = clock[static_cast<size_t>(w)];
      if (i >= list.size()) continue;
      finished = false;
      const Action& a = list[i];
      if (a.op == Op::kUpdate) {
        // A collective of the stage's replicas: completes when the last one arrives.
        const int stage = s.stageOfWorker(w);
        auto& u = updates[{stage, a.version}];
        if (!atUpdate[static_cast<size_t>(w)]) {
          atUpdate[static_cast<size_t>(w)] = 1;
          u.first++;
          u.second = std::max(u.second, t);
          progress = true;
        }
        if (u.first < s.replicasOf(stage)) continue;
        t = u.second;
        atUpdate[static_cast<size_t>(w)] = 0;
        ++i;
        progress = true;
        continue;
      }
      if (isCompute(a.op)) {
        const size_t c = cell(a);
        long ready = 0;
        if (a.op == Op::kForward) {
          if (a.vstage > 0 && actIn[c] < 0) fail(s, w, a, "runs before its input activation is received");
          ready = a.vstage > 0 ? actIn[c] : 0;
        } else if (a.op == Op::kBackwardWeight) {
          if (inputGradDone[c] < 0) fail(s, w, a, "runs before its input-gradient half");
        } else {
          if (fwdDone[c] < 0) fail(s, w, a, "runs before its forward");
          if (a.vstage + 1 < nv && gradIn[c] < 0) fail(s, w, a, "runs before its output gradient is received");
          ready = a.vstage + 1 < nv ? gradIn[c] : 0;
        }
        t = std::max(t, ready) + costOf(a.op);
        if (a.op == Op::kForward) fwdDone[c] = t;
        if (a.op == Op::kBackward || a.op == Op::kBackwardInput) inputGradDone[c] = t;
        int& h = held[static_cast<size_t>(w)];
        int& d = deferred[static_cast<size_t>(w)];
        if (a.op == Op::kForward) {
          report.peakActivations[static_cast<size_t>(w)] = std::max(report.peakActivations[static_cast<size_t>(w)], ++h);
        } else if (a.op == Op::kBackwardWeight) {
          --d;
        } else {
          --h;
          if (a.op == Op::kBackwardInput) {
            report.peakDeferredWeights[static_cast<size_t>(w)] = std::max(report.peakDeferredWeights[static_cast<size_t>(w)], ++d);
          }
        }
        busy += costOf(a.op);
        ++i;
        progress = true;
        continue;
      }
      // A group of communication: post every member, complete when every partner is posted.
      const size_t end = groupEnd(w, i);
      long done = t;
      bool complete = true;
      for (size_t k = i; k < end; ++k) {
        const Action& c = list[k];
        Side& mine = sides[{keyOf(c), isSend(c.op)}];
        if (!mine.posted) {
          if (c.op == Op::kSendActivation && fwdDone[cell(c)] < 0) fail(s, w, c, "sends an activation before its forward");
          if (c.op == Op::kSendGradient && inputGradDone[cell(c)] < 0) fail(s, w, c, "sends a gradient before its backward");
          mine = Side{true, t};
          progress = true;
        }
        const Side& other = sides[{keyOf(c), !isSend(c.op)}];
        if (!other.posted) {
          complete = false;
          continue;
        }
        done = std::max(done, std::max(mine.time, other.time));
      }
      if (!complete) continue;
      for (size_t k = i; k < end; ++k) {
        const Action& c = list[k];
        if (c.op == Op::kRecvActivation) actIn[cell(c)] = done;
        if (c.op == Op::kRecvGradient) gradIn[cell(c)] = done;
      }
      t = done;
      i = end;
      progress = true;
    }
    if (finished) break;
    if (!progress) {
      std::string who;
      for (int w = 0; w < nw; ++w) {
        const auto& list = s.actions[static_cast<size_t>(w)];
        size_t i = pc[static_cast<size_t>(w)];
        if (i >= list.size()) continue;
        who += (who.empty() ? "" : "; ") + workerName(s, w) + " waits at " + describe(s, list[i]);
        if (isComm(list[i].op)) {
          for (size_t k = i + 1; k < groupEnd(w, i); ++k) who += " + " + describe(s, list[k]);
        }
      }
      throw Error(cfxInvalidUsage, s.name + ": deadlock: " + who);
    }
  }
  checkMessageOrder(s);

  report.makespan = *std::max_element(clock.begin(), clock.end());
  report.bubbleFraction = 1.0 - static_cast<double>(busy) / (static_cast<double>(nw) * static_cast<double>(report.makespan));
  return report;
}

}  // namespace conflux::train::pipeline
