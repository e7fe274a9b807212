// Pipeline schedules as data: the generators pass the validator for many shapes, with the closed-
// form bubbles and activation peaks; hand-broken schedules are rejected naming stage and action.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "conflux/train/pipeline/schedule.h"

namespace cfxtest {
namespace {

namespace pp = conflux::train::pipeline;

double closedForm(int p, int m, int v) { return static_cast<double>(p - 1) / static_cast<double>(v * m + p - 1); }

TEST(PipelineSchedule, GeneratorsValidateWithClosedFormBubbles) {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 12; ++m) {
      pp::ScheduleReport g = pp::validate(pp::gpipe(p, m));
      EXPECT_NEAR(g.bubbleFraction, closedForm(p, m, 1), 1e-12) << "GPipe p=" << p << " m=" << m;
      for (int st = 0; st < p; ++st) EXPECT_EQ(g.peakActivations[static_cast<size_t>(st)], m);
      pp::ScheduleReport f = pp::validate(pp::oneFOneB(p, m));
      EXPECT_NEAR(f.bubbleFraction, closedForm(p, m, 1), 1e-12) << "1F1B p=" << p << " m=" << m;
      for (int st = 0; st < p; ++st) {
        EXPECT_LE(f.peakActivations[static_cast<size_t>(st)], std::min(p - st, m)) << "1F1B p=" << p << " m=" << m;
      }
      if (m % p != 0) continue;
      for (int v = 2; v <= 3; ++v) {
        pp::ScheduleReport i = pp::validate(pp::interleaved1F1B(p, m, v));
        EXPECT_NEAR(i.bubbleFraction, closedForm(p, m, v), 1e-12) << "interleaved p=" << p << " m=" << m << " v=" << v;
      }
    }
  }
}

// The new schedules' exact figures for p = 1..6, m = 1..12.
TEST(PipelineSchedule, AsyncAndZeroBubbleFigures) {
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 12; ++m) {
      const std::string at = " p=" + std::to_string(p) + " m=" + std::to_string(m);
      const pp::ScheduleReport f = pp::validate(pp::oneFOneB(p, m));
      // ZB-H1: 1F1B's activations from forward to input gradient, at most p weight halves
      // waiting, and for m >= p the bubble (p - 1) / (3m + p - 1), a third of 1F1B's (p - 1) units
      // of F + B + W; never more than 1F1B's, and less for p >= 2.
      const pp::ScheduleReport z = pp::validate(pp::zeroBubbleH1(p, m));
      for (int st = 0; st < p; ++st) {
        EXPECT_EQ(z.peakActivations[static_cast<size_t>(st)], std::min(p - st, m)) << "ZB-H1" << at;
        EXPECT_EQ(z.peakActivations[static_cast<size_t>(st)], f.peakActivations[static_cast<size_t>(st)]) << "ZB-H1" << at;
        EXPECT_LE(z.peakDeferredWeights[static_cast<size_t>(st)], p) << "ZB-H1" << at;
        EXPECT_EQ(f.peakDeferredWeights[static_cast<size_t>(st)], 0) << "1F1B" << at;
      }
      if (m >= p) {
        EXPECT_NEAR(z.bubbleFraction, static_cast<double>(p - 1) / (3.0 * m + p - 1), 1e-12) << "ZB-H1" << at;
        EXPECT_EQ(z.makespan, 3L * m + p - 1) << "ZB-H1" << at;
      }
      EXPECT_LE(z.bubbleFraction, f.bubbleFraction + 1e-12) << "ZB-H1" << at;
      if (p >= 2) {
        EXPECT_LT(z.bubbleFraction, f.bubbleFraction) << "ZB-H1" << at;
      }
      // PipeDream: 1F1B's order and bubble; stage s holds p - s versions at most: exactly
      // min(m, 2) when its warm-up takes every micro-batch, else min(p - s, m - (p - s) + 2).
      const pp::ScheduleReport d = pp::validate(pp::pipeDream(p, m));
      EXPECT_NEAR(d.bubbleFraction, closedForm(p, m, 1), 1e-12) << "PipeDream" << at;
      for (int st = 0; st < p; ++st) {
        const int inFlight = p - st;
        const int versions = inFlight >= m ? std::min(m, 2) : std::min(inFlight, m - inFlight + 2);
        EXPECT_EQ(d.peakVersions[static_cast<size_t>(st)], versions) << "PipeDream stage " << st << at;
        EXPECT_LE(d.peakVersions[static_cast<size_t>(st)], inFlight) << "PipeDream stage " << st << at;
        EXPECT_EQ(d.peakActivations[static_cast<size_t>(st)], std::min(inFlight, m)) << "PipeDream" << at;
      }
      // PipeDream-2BW: two versions at most, whatever the batch (>= p) and the stream.
      for (int batch : {p, p + 1, 2 * p}) {
        const pp::ScheduleReport w = pp::validate(pp::pipeDream2BW(p, m, batch));
        EXPECT_NEAR(w.bubbleFraction, closedForm(p, m, 1), 1e-12) << "2BW batch " << batch << at;
        for (int st = 0; st < p; ++st) {
          EXPECT_EQ(w.peakVersions[static_cast<size_t>(st)], m > batch ? 2 : 1) << "2BW batch " << batch << " stage " << st << at;
        }
      }
      // 1F1B-RR with no stage replicated is 2BW's timeline: the same bubble.
      const pp::ScheduleReport r = pp::validate(pp::oneFOneBRR(std::vector<int>(static_cast<size_t>(p), 1), m, p));
      EXPECT_NEAR(r.bubbleFraction, closedForm(p, m, 1), 1e-12) << "1F1B-RR" << at;
    }
  }
}

// Replicated stages: every shape validates with two versions per worker, and each replica takes
// its share of the micro-batches.
TEST(PipelineSchedule, RoundRobinShapes) {
  for (const std::vector<int>& shape : std::vector<std::vector<int>>{{2, 1}, {1, 2}, {2, 1, 1}, {1, 1, 2}, {1, 2, 1}, {2, 2}, {3, 1}, {1, 3}, {2, 2, 2}}) {
    int workers = 0;
    for (int r : shape) workers += r;
    for (int m : {6, 12, 24}) {
      pp::Schedule s = pp::oneFOneBRR(shape, m, 6);
      ASSERT_EQ(s.workers(), workers);
      pp::ScheduleReport rep = pp::validate(s);
      for (int w = 0; w < workers; ++w) {
        EXPECT_LE(rep.peakVersions[static_cast<size_t>(w)], 2) << s.name << " worker " << w;
        int forwards = 0;
        for (const pp::Action& a : s.actions[static_cast<size_t>(w)]) {
          if (a.op != pp::Op::kForward) continue;
          ++forwards;
          EXPECT_EQ(s.workerOf(a.vstage, a.microbatch), w) << s.name;
        }
        EXPECT_EQ(forwards, m / s.replicasOf(s.stageOfWorker(w))) << s.name << " worker " << w;
      }
    }
  }
  EXPECT_THROW(pp::oneFOneBRR({2, 1}, 8, 3), conflux::train::Error);  // batch not a multiple of 2
  EXPECT_THROW(pp::pipeDream2BW(4, 8, 3), conflux::train::Error);     // batch < stages
}

TEST(PipelineSchedule, BubbleOrdering) {
  double g = pp::validate(pp::gpipe(4, 8)).bubbleFraction;
  double f = pp::validate(pp::oneFOneB(4, 8)).bubbleFraction;
  double i = pp::validate(pp::interleaved1F1B(4, 8, 2)).bubbleFraction;
  EXPECT_DOUBLE_EQ(g, f);
  EXPECT_LT(i, f);
}

std::string rejection(const pp::Schedule& s) {
  try {
    pp::validate(s);
  } catch (const conflux::train::Error& e) {
    EXPECT_EQ(e.code(), cfxInvalidUsage);
    return e.what();
  }
  return "accepted";
}

size_t find(const pp::Schedule& s, int stage, pp::Op op, int mb) {
  const auto& a = s.actions[static_cast<size_t>(stage)];
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].op == op && a[k].microbatch == mb) return k;
  }
  return a.size();
}

TEST(PipelineSchedule, MissingReceiveIsNamed) {
  pp::Schedule s = pp::oneFOneB(3, 4);
  auto& a = s.actions[1];
  a.erase(a.begin() + static_cast<std::ptrdiff_t>(find(s, 1, pp::Op::kRecvActivation, 2)));
  std::string why = rejection(s);
  EXPECT_NE(why.find("stage 0, send-act(mb 2, vs 0 -> stage 1): no matching receive"), std::string::npos) << why;
}

TEST(PipelineSchedule, SwappedOrderThatDeadlocksIsNamed) {
  // Stage 1 of GPipe receives micro-batch 1 before micro-batch 0 while stage 0 sends 0 first.
  pp::Schedule s = pp::gpipe(2, 2);
  auto& a = s.actions[1];
  size_t r0 = find(s, 1, pp::Op::kRecvActivation, 0), r1 = find(s, 1, pp::Op::kRecvActivation, 1);
  std::swap(a[r0].microbatch, a[r1].microbatch);
  std::swap(a[r0 + 1].microbatch, a[r1 + 1].microbatch);  // the forwards follow their inputs
  std::string why = rejection(s);
  EXPECT_NE(why.find("deadlock: stage 0 waits at send-act(mb 0, vs 0 -> stage 1); stage 1 waits at recv-act(mb 1"),
            std::string::npos) << why;
}

TEST(PipelineSchedule, BackwardBeforeForwardIsNamed) {
  pp::Schedule s = pp::gpipe(1, 2);
  auto& a = s.actions[0];
  std::swap(a[0], a[2]);  // B(mb 0) first
  std::string why = rejection(s);
  EXPECT_NE(why.find("stage 0, B(mb 0, vs 0): runs before its forward"), std::string::npos) << why;
}

TEST(PipelineSchedule, BackwardBeforeItsGradientIsNamed) {
  // Moving 1F1B's gradient receive after its backward: the backward runs without its input.
  pp::Schedule s = pp::oneFOneB(2, 2);
  auto& a = s.actions[0];
  size_t rg = find(s, 0, pp::Op::kRecvGradient, 0);
  std::swap(a[rg], a[rg + 1]);
  std::string why = rejection(s);
  EXPECT_NE(why.find("B(mb 0, vs 0): runs before its output gradient is received"), std::string::npos) << why;
}

TEST(PipelineSchedule, StaleBackwardIsNamed) {
  // PipeDream's stage 0 backward of mb 2 on a version other than its forward's.
  pp::Schedule s = pp::pipeDream(2, 4);
  auto& a = s.actions[0];
  a[find(s, 0, pp::Op::kBackward, 2)].version += 1;
  std::string why = rejection(s);
  EXPECT_NE(why.find("stage 0, B(mb 2, vs 0, version 2): uses weight version 2 but its forward used 1"), std::string::npos) << why;
}

TEST(PipelineSchedule, FutureVersionIsNamed) {
  pp::Schedule s = pp::pipeDream(2, 4);
  auto& a = s.actions[1];
  a[find(s, 1, pp::Op::kForward, 1)].version = 5;
  std::string why = rejection(s);
  EXPECT_NE(why.find("stage 1, F(mb 1, vs 1, version 5): uses weight version 5 but the latest is 1"), std::string::npos) << why;
}

TEST(PipelineSchedule, WeightHalfBeforeInputHalfIsNamed) {
  pp::Schedule s = pp::zeroBubbleH1(2, 3);
  auto& a = s.actions[1];
  std::swap(a[find(s, 1, pp::Op::kBackwardInput, 0)], a[find(s, 1, pp::Op::kBackwardWeight, 0)]);
  std::string why = rejection(s);
  EXPECT_NE(why.find("stage 1, W(mb 0, vs 1): runs before its input-gradient half"), std::string::npos) << why;
  pp::Schedule t = pp::zeroBubbleH1(2, 3);
  t.actions[0].erase(t.actions[0].begin() + static_cast<std::ptrdiff_t>(find(t, 0, pp::Op::kBackwardWeight, 2)));
  why = rejection(t);
  EXPECT_NE(why.find("micro-batch 2 has no weight-gradient backward on virtual stage 0"), std::string::npos) << why;
}

TEST(PipelineSchedule, ReplicaUpdatesMustAgree) {
  // One replica of stage 0 skips its last update: the replicas' collective cannot match.
  pp::Schedule s = pp::oneFOneBRR({2, 1}, 8, 4);
  auto& a = s.actions[1];
  for (size_t k = a.size(); k-- > 0;) {
    if (a[k].op == pp::Op::kUpdate) {
      a.erase(a.begin() + static_cast<std::ptrdiff_t>(k));
      break;
    }
  }
  std::string why = rejection(s);
  EXPECT_NE(why.find("the replicas of stage 0 make different numbers of updates"), std::string::npos) << why;
  // A micro-batch on the wrong replica.
  pp::Schedule t = pp::oneFOneBRR({2, 1}, 8, 4);
  t.actions[0][0].microbatch = 1;
  why = rejection(t);
  EXPECT_NE(why.find("stage 0 replica 0, F(mb 1, vs 0): belongs to stage 0 replica 1"), std::string::npos) << why;
}

TEST(PipelineSchedule, ShapesAreChecked) {
  EXPECT_THROW(pp::interleaved1F1B(4, 6, 2), conflux::train::Error);  // m not a multiple of p
  EXPECT_THROW(pp::gpipe(0, 4), conflux::train::Error);
}

}  // namespace
}  // namespace cfxtest
