// Pipeline schedules as data. A schedule lists, for every stage (rank), the actions it performs
// in order: forward and backward of a micro-batch on one of its virtual stages (model chunks), and
// the sends and receives of activations and gradients between neighbouring virtual stages.
// Consecutive communication actions of a stage form one group (issued between cfxGroupStart and
// cfxGroupEnd by the executor), which is what keeps 1F1B's "send activation, receive gradient"
// pairs from deadlocking.
//
// Virtual stage vs of a schedule with p stages and v chunks lives on stage vs % p (Megatron's
// interleaving: stage s holds chunks s, s + p, s + 2p, ...). Activations flow vs -> vs + 1,
// gradients vs + 1 -> vs.
#pragma once

#include <string>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train::pipeline {

enum class Op { kForward, kBackward, kSendActivation, kRecvActivation, kSendGradient, kRecvGradient };

struct Action {
  Op op;
  int microbatch;
  int vstage;  // the virtual stage on this rank that computes, sends or receives
};

struct Schedule {
  std::string name;
  int stages = 1;        // p
  int microbatches = 1;  // m
  int chunks = 1;        // v
  std::vector<std::vector<Action>> actions;  // per stage, in order

  int virtualStages() const { return stages * chunks; }
  int stageOf(int vstage) const { return vstage % stages; }
};

// All forwards, then all backwards (GPipe).
CFX_TRAIN_API Schedule gpipe(int p, int m);
// Warm-up forwards, then one forward and one backward in turn, then the remaining backwards
// (PipeDream-Flush, "1F1B").
CFX_TRAIN_API Schedule oneFOneB(int p, int m);
// 1F1B over v model chunks per stage (Megatron-LM's interleaved schedule); m must be a multiple
// of p.
CFX_TRAIN_API Schedule interleaved1F1B(int p, int m, int v);

struct ScheduleReport {
  double bubbleFraction = 0;          // idle share of stages x makespan (forward 1, backward 2 units)
  long makespan = 0;                  // in those units
  std::vector<int> peakActivations;   // per stage: most (micro-batch, chunk) forwards held at once
};

// Checks the schedule and simulates it: every send has exactly one matching receive; every
// forward has its input and every backward its forward and output gradient, in order on its
// stage; and the stages cannot deadlock, with groups completing only when every send and receive
// in them has its partner posted (rendezvous: the strictest semantics). Throws Error
// (cfxInvalidUsage) naming the stage and action otherwise.
CFX_TRAIN_API ScheduleReport validate(const Schedule& schedule);

// "F(mb 3, vs 5)", "send-act(mb 0, vs 1 -> stage 2)" for messages.
CFX_TRAIN_API std::string describe(const Schedule& schedule, const Action& action);

}  // namespace conflux::train::pipeline
