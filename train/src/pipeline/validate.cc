// The schedule validator: static matching of sends and receives, then a simulation of every
// stage in lock-free time units (forward 1, backward 2, communication free) under rendezvous
// semantics. The simulation finds order errors (a forward before its input arrives, a backward
// before its forward), deadlocks (no stage can move), the makespan and bubble, and how many
// forwards each stage holds at once.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "conflux/train/pipeline/schedule.h"

namespace conflux::train::pipeline {
namespace {

bool isComm(Op op) { return op != Op::kForward && op != Op::kBackward; }
bool isSend(Op op) { return op == Op::kSendActivation || op == Op::kSendGradient; }

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

[[noreturn]] void fail(const Schedule& s, int stage, const Action& a, const std::string& why) {
  throw Error(cfxInvalidUsage, s.name + ": stage " + std::to_string(stage) + ", " + describe(s, a) + ": " + why);
}

struct Side {
  bool posted = false;
  long time = 0;
};

}  // namespace

std::string describe(const Schedule& s, const Action& a) {
  std::string mb = "mb " + std::to_string(a.microbatch) + ", vs " + std::to_string(a.vstage);
  auto peer = [&](int vs) { return " -> stage " + std::to_string(s.stageOf((vs + s.virtualStages()) % s.virtualStages())); };
  auto from = [&](int vs) { return " <- stage " + std::to_string(s.stageOf((vs + s.virtualStages()) % s.virtualStages())); };
  switch (a.op) {
    case Op::kForward: return "F(" + mb + ")";
    case Op::kBackward: return "B(" + mb + ")";
    case Op::kSendActivation: return "send-act(" + mb + peer(a.vstage + 1) + ")";
    case Op::kRecvActivation: return "recv-act(" + mb + from(a.vstage - 1) + ")";
    case Op::kSendGradient: return "send-grad(" + mb + peer(a.vstage - 1) + ")";
    case Op::kRecvGradient: return "recv-grad(" + mb + from(a.vstage + 1) + ")";
  }
  return "?";
}

ScheduleReport validate(const Schedule& s) {
  const int p = s.stages, m = s.microbatches, nv = s.virtualStages();
  if (p < 1 || m < 1 || s.chunks < 1 || static_cast<int>(s.actions.size()) != p) {
    throw Error(cfxInvalidArgument, s.name + ": malformed schedule (stages, micro-batches, chunks or action lists)");
  }
  // 1. Static checks: ranges, placement, and exactly one receive per send.
  std::map<Key, std::pair<int, int>> count;  // key -> (sends, receives)
  std::map<std::pair<int, int>, int> forwards, backwards;
  for (int st = 0; st < p; ++st) {
    for (const Action& a : s.actions[static_cast<size_t>(st)]) {
      if (a.microbatch < 0 || a.microbatch >= m || a.vstage < 0 || a.vstage >= nv) fail(s, st, a, "out of range");
      if (s.stageOf(a.vstage) != st) fail(s, st, a, "virtual stage belongs to stage " + std::to_string(s.stageOf(a.vstage)));
      if ((a.op == Op::kRecvActivation || a.op == Op::kSendGradient) && a.vstage == 0) fail(s, st, a, "the first virtual stage has no predecessor");
      if ((a.op == Op::kSendActivation || a.op == Op::kRecvGradient) && a.vstage == nv - 1) fail(s, st, a, "the last virtual stage has no successor");
      if (isComm(a.op)) {
        auto& c = count[keyOf(a)];
        (isSend(a.op) ? c.first : c.second)++;
      } else {
        int n = ++(a.op == Op::kForward ? forwards : backwards)[{a.microbatch, a.vstage}];
        if (n > 1) fail(s, st, a, "appears twice");
      }
    }
  }
  for (int st = 0; st < p; ++st) {
    for (const Action& a : s.actions[static_cast<size_t>(st)]) {
      if (!isComm(a.op)) continue;
      auto [sends, recvs] = count[keyOf(a)];
      if (isSend(a.op) && recvs != 1) fail(s, st, a, recvs == 0 ? "no matching receive" : "several matching receives");
      if (!isSend(a.op) && sends != 1) fail(s, st, a, sends == 0 ? "no matching send" : "several matching sends");
    }
  }
  for (int mb = 0; mb < m; ++mb) {
    for (int vs = 0; vs < nv; ++vs) {
      if (!forwards.count({mb, vs}) || !backwards.count({mb, vs})) {
        throw Error(cfxInvalidUsage, s.name + ": micro-batch " + std::to_string(mb) + " has no " +
                                         (forwards.count({mb, vs}) ? "backward" : "forward") + " on virtual stage " +
                                         std::to_string(vs) + " (stage " + std::to_string(s.stageOf(vs)) + ")");
      }
    }
  }

  // 2. Simulation.
  std::map<std::pair<Key, bool>, Side> sides;  // (transfer, is-send) -> posted?
  const size_t cells = static_cast<size_t>(m) * static_cast<size_t>(nv);
  auto cell = [&](const Action& a) { return static_cast<size_t>(a.microbatch) * static_cast<size_t>(nv) + static_cast<size_t>(a.vstage); };
  std::vector<long> fwdDone(cells, -1), actIn(cells, -1), gradIn(cells, -1);
  std::vector<size_t> pc(static_cast<size_t>(p), 0);
  std::vector<long> clock(static_cast<size_t>(p), 0);
  std::vector<int> held(static_cast<size_t>(p), 0);
  ScheduleReport report;
  report.peakActivations.assign(static_cast<size_t>(p), 0);
  long busy = 0;
  auto groupEnd = [&](int st, size_t from) {
    const auto& list = s.actions[static_cast<size_t>(st)];
    size_t e = from;
    while (e < list.size() && isComm(list[e].op)) ++e;
    return e;
  };
  for (;;) {
    bool progress = false, finished = true;
    for (int st = 0; st < p; ++st) {
      const auto& list = s.actions[static_cast<size_t>(st)];
      size_t& i = pc[static_cast<size_t>(st)];
      long& t = clock[static_cast<size_t>(st)];
      if (i >= list.size()) continue;
      finished = false;
      const Action& a = list[i];
      if (a.op == Op::kForward) {
        if (a.vstage > 0 && actIn[cell(a)] < 0) fail(s, st, a, "runs before its input activation is received");
        t = std::max(t, a.vstage > 0 ? actIn[cell(a)] : 0) + 1;
        fwdDone[cell(a)] = t;
        int& h = held[static_cast<size_t>(st)];
        report.peakActivations[static_cast<size_t>(st)] = std::max(report.peakActivations[static_cast<size_t>(st)], ++h);
        busy += 1;
        ++i;
        progress = true;
        continue;
      }
      if (a.op == Op::kBackward) {
        if (fwdDone[cell(a)] < 0) fail(s, st, a, "runs before its forward");
        if (a.vstage + 1 < nv && gradIn[cell(a)] < 0) fail(s, st, a, "runs before its output gradient is received");
        t = std::max(t, a.vstage + 1 < nv ? gradIn[cell(a)] : 0) + 2;
        held[static_cast<size_t>(st)]--;
        busy += 2;
        ++i;
        progress = true;
        continue;
      }
      // A group of communication: post every member, complete when every partner is posted.
      const size_t end = groupEnd(st, i);
      long done = t;
      bool complete = true;
      for (size_t k = i; k < end; ++k) {
        const Action& c = list[k];
        Side& mine = sides[{keyOf(c), isSend(c.op)}];
        if (!mine.posted) {
          if (c.op == Op::kSendActivation && fwdDone[cell(c)] < 0) fail(s, st, c, "sends an activation before its forward");
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
      for (int st = 0; st < p; ++st) {
        const auto& list = s.actions[static_cast<size_t>(st)];
        size_t i = pc[static_cast<size_t>(st)];
        if (i >= list.size()) continue;
        who += (who.empty() ? "" : "; ") + std::string("stage ") + std::to_string(st) + " waits at " + describe(s, list[i]);
        for (size_t k = i + 1; k < groupEnd(st, i); ++k) who += " + " + describe(s, list[k]);
      }
      throw Error(cfxInvalidUsage, s.name + ": deadlock: " + who);
    }
  }
  // 3. Order (a schedule that passes the simulation can still cross messages inside a group): Conflux (like NCCL) matches the sends and receives between two ranks in the order
  // they are posted, so each stage must receive from a peer in the order that peer sends.
  std::map<std::pair<int, int>, std::vector<std::pair<int, const Action*>>> sent, received;  // (from, to)
  for (int st = 0; st < p; ++st) {
    for (const Action& a : s.actions[static_cast<size_t>(st)]) {
      if (!isComm(a.op)) continue;
      const int vsPeer = a.op == Op::kSendActivation || a.op == Op::kRecvGradient ? a.vstage + 1 : a.vstage - 1;
      const int peer = s.stageOf(vsPeer);
      if (isSend(a.op)) {
        sent[{st, peer}].push_back({st, &a});
      } else {
        received[{peer, st}].push_back({st, &a});
      }
    }
  }
  for (const auto& [pair, sends] : sent) {
    const auto& recvs = received[pair];
    for (size_t k = 0; k < sends.size() && k < recvs.size(); ++k) {
      if (keyOf(*sends[k].second) != keyOf(*recvs[k].second)) {
        fail(s, pair.first, *sends[k].second,
             "is the sender's message " + std::to_string(k) + " to stage " + std::to_string(pair.second) +
                 ", but that stage's receive " + std::to_string(k) + " from it is " + describe(s, *recvs[k].second) +
                 " (messages between two stages match in the order they are posted)");
      }
    }
  }

  report.makespan = *std::max_element(clock.begin(), clock.end());
  report.bubbleFraction = 1.0 - static_cast<double>(busy) / (static_cast<double>(p) * static_cast<double>(report.makespan));
  return report;
}

}  // namespace conflux::train::pipeline
