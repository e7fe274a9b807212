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
//
// Asynchronous schedules (PipeDream) also carry weight updates and versions: a stage's weights
// start at version 0 and each kUpdate makes the next; every forward and backward names the version
// it computes with, and a backward must use its forward's (weight stashing). A stage may be
// replicated (1F1B-RR): its replicas are separate workers, micro-batch i runs on replica
// i % replicas, and the replicas' kUpdate is one collective (their gradients are averaged).
// Workers are numbered stage by stage: stage 0's replicas first.
#pragma once

#include <string>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train::pipeline {

// kBackward is the whole backward; zero-bubble schedules split it into kBackwardInput (the
// gradient of the input, which the previous stage waits for) and kBackwardWeight (the gradient of
// the weights, which nobody waits for). kUpdate applies the optimizer to the gradients
// accumulated since the last one.
enum class Op {
  kForward,
  kBackward,
  kSendActivation,
  kRecvActivation,
  kSendGradient,
  kRecvGradient,
  kBackwardInput,
  kBackwardWeight,
  kUpdate,
};

inline bool isCommunication(Op op) {
  return op == Op::kSendActivation || op == Op::kRecvActivation || op == Op::kSendGradient || op == Op::kRecvGradient;
}
inline bool isCompute(Op op) {
  return op == Op::kForward || op == Op::kBackward || op == Op::kBackwardInput || op == Op::kBackwardWeight;
}

struct Action {
  Op op;
  int microbatch;
  int vstage;       // the virtual stage on this rank that computes, sends or receives (kUpdate: the rank's first)
  int version = 0;  // compute: the weight version used; kUpdate: the version it makes
};

struct Schedule {
  std::string name;
  int stages = 1;        // p
  int microbatches = 1;  // m
  int chunks = 1;        // v
  std::vector<int> replicas;                 // per stage (1F1B-RR); empty: one worker per stage
  std::vector<std::vector<Action>> actions;  // per worker, in order

  int virtualStages() const { return stages * chunks; }
  int stageOf(int vstage) const { return vstage % stages; }
  int replicasOf(int stage) const { return replicas.empty() ? 1 : replicas[static_cast<size_t>(stage)]; }
  CFX_TRAIN_API int workers() const;             // one per stage, or the sum of replicas
  CFX_TRAIN_API int firstWorker(int stage) const;   // stage's replica 0
  CFX_TRAIN_API int stageOfWorker(int worker) const;
  // The worker that runs micro-batch mb on virtual stage vs.
  int workerOf(int vstage, int mb) const { return firstWorker(stageOf(vstage)) + mb % replicasOf(stageOf(vstage)); }
};

// All forwards, then all backwards (GPipe).
CFX_TRAIN_API Schedule gpipe(int p, int m);
// Warm-up forwards, then one forward and one backward in turn, then the remaining backwards
// (PipeDream-Flush, "1F1B").
CFX_TRAIN_API Schedule oneFOneB(int p, int m);
// 1F1B over v model chunks per stage (Megatron-LM's interleaved schedule); m must be a multiple
// of p.
CFX_TRAIN_API Schedule interleaved1F1B(int p, int m, int v);
// Zero bubble ZB-H1 (Qi et al. 2024): backward split into input and weight gradients; each stage
// holds at most 1F1B's p - s micro-batches from forward to input gradient, and fills its bubbles
// with deferred weight gradients (at most p waiting). Bubble (p - 1) / (3m + p - 1) for m >= p,
// a third of 1F1B's.
CFX_TRAIN_API Schedule zeroBubbleH1(int p, int m);

// The asynchronous schedules run m micro-batches as one stream: the pipeline fills once and
// drains once, with updates inside, and no flush between them.
//
// PipeDream: 1F1B, each stage updates its weights after every backward; a forward uses the
// latest version, its backward the same one (stage s holds up to p - s versions).
CFX_TRAIN_API Schedule pipeDream(int p, int m);
// PipeDream-2BW: one update per `batch` micro-batches (their gradients accumulated); every
// micro-batch of batch b uses version max(b - 1, 0) on every stage, so an update applies the
// gradient of the version before (W(t+1) = W(t) - lr * grad(W(t-1))) and a stage holds two
// versions.
CFX_TRAIN_API Schedule pipeDream2BW(int p, int m, int batch);
// 1F1B-RR: PipeDream-2BW with stage s replicated replicas[s] times; micro-batch i runs on
// replica i % replicas[s] of every stage, and `batch` must be a multiple of every replica count.
CFX_TRAIN_API Schedule oneFOneBRR(std::vector<int> replicas, int m, int batch);

struct ScheduleReport {
  double bubbleFraction = 0;          // idle share of workers x makespan (forward 1, backward 2 or 1 + 1)
  long makespan = 0;                  // in those units
  std::vector<int> peakActivations;   // per worker: most (micro-batch, chunk) forwards held at once,
                                      // from the forward to its backward (kBackward or kBackwardInput)
  std::vector<int> peakDeferredWeights;  // per worker: most input halves done whose weight half is not
                                         // (their weight-gradient inputs held; 0 without a split)
  std::vector<int> peakVersions;      // per worker: most weight versions needed at once (1: no stash)
};

// Checks the schedule and simulates it: every send has exactly one matching receive; every
// forward has its input and every backward its forward and output gradient, in order on its
// stage; and the stages cannot deadlock, with groups completing only when every send and receive
// in them has its partner posted (rendezvous: the strictest semantics), and a replicated stage's
// update only when all its replicas reach it. Weight versions: a forward's version must exist
// when it runs, and its backward (both halves) must use the same. Throws Error
// (cfxInvalidUsage) naming the worker and action otherwise.
CFX_TRAIN_API ScheduleReport validate(const Schedule& schedule);

// "F(mb 3, vs 5)", "send-act(mb 0, vs 1 -> stage 2)" for messages.
CFX_TRAIN_API std::string describe(const Schedule& schedule, const Action& action);

}  // namespace conflux::train::pipeline
