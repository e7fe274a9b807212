// Pipeline schedules as data: the generators pass the validator for many shapes, with the closed-
// form bubbles and activation peaks; hand-broken schedules are rejected naming stage and action.
#include <gtest/gtest.h>

#include <string>

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

TEST(PipelineSchedule, ShapesAreChecked) {
  EXPECT_THROW(pp::interleaved1F1B(4, 6, 2), conflux::train::Error);  // m not a multiple of p
  EXPECT_THROW(pp::gpipe(0, 4), conflux::train::Error);
}

}  // namespace
}  // namespace cfxtest
