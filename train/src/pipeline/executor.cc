// The pipeline executor: walks one stage's action list. Compute actions call the user's
// callbacks; each run of consecutive send/receive actions becomes one Conflux group, posted and
// completed together. Buffers live in maps keyed by (micro-batch, virtual stage) from the moment
// they are produced or received until they are consumed or sent. Updates and weight versions go
// through the worker's WeightStash.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <utility>

#include "conflux/train/pipeline/executor.h"
#include "weight_stash.h"

namespace conflux::train::pipeline {
namespace {

using Clock = std::chrono::steady_clock;
using Cell = std::pair<int, int>;  // (micro-batch, virtual stage)

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool isComm(Op op) { return isCommunication(op); }

}  // namespace

struct Executor::Impl {
  cfxComm_t comm = nullptr;
  Schedule schedule;
  ScheduleReport report;
  StageFunctions fns;
  ExecutorOptions opts;
  int stage = 0, worker = 0;
  std::optional<WeightStash> stash;

  // Buffers of the step in flight.
  std::map<Cell, std::vector<float>> actIn, actOut, gradIn, gradOut;
  size_t buffered = 0;
  StepResult result;

  size_t sizeOf(int vstage) const { return fns.activationSize(vstage); }

  void account() {
    size_t bytes = 0;
    for (const auto* m : {&actIn, &actOut, &gradIn, &gradOut}) {
      for (const auto& [cell, buf] : *m) bytes += buf.size() * sizeof(float);
    }
    result.peakBufferedBytes = std::max(result.peakBufferedBytes, bytes);
  }

  static std::vector<float>& take(std::map<Cell, std::vector<float>>& m, Cell c, const char* what) {
    auto it = m.find(c);
    if (it == m.end()) {
      throw Error(cfxInternalError, std::string("pipeline executor: no ") + what + " for mb " + std::to_string(c.first) +
                                        ", vs " + std::to_string(c.second));
    }
    return it->second;
  }

  // One group: post every send and receive, complete them together.
  void communicate(const std::vector<Action>& list, size_t from, size_t to) {
    const auto t0 = Clock::now();
    std::vector<Cell> sentActs, sentGrads;
    check(cfxGroupStart(), "cfxGroupStart", comm);
    cfxResult_t posted = cfxSuccess;
    for (size_t k = from; k < to && posted == cfxSuccess; ++k) {
      const Action& a = list[k];
      const Cell c{a.microbatch, a.vstage};
      switch (a.op) {
        case Op::kSendActivation: {
          auto& buf = take(actOut, c, "activation to send");
          posted = cfxSend(buf.data(), buf.size(), cfxFloat32, schedule.workerOf(a.vstage + 1, a.microbatch), comm, nullptr);
          sentActs.push_back(c);
          break;
        }
        case Op::kSendGradient: {
          auto& buf = take(gradOut, c, "gradient to send");
          posted = cfxSend(buf.data(), buf.size(), cfxFloat32, schedule.workerOf(a.vstage - 1, a.microbatch), comm, nullptr);
          sentGrads.push_back(c);
          break;
        }
        case Op::kRecvActivation: {
          auto& buf = actIn[c];
          buf.assign(sizeOf(a.vstage - 1), 0.0f);
          posted = cfxRecv(buf.data(), buf.size(), cfxFloat32, schedule.workerOf(a.vstage - 1, a.microbatch), comm, nullptr);
          break;
        }
        case Op::kRecvGradient: {
          auto& buf = gradIn[c];
          buf.assign(sizeOf(a.vstage), 0.0f);
          posted = cfxRecv(buf.data(), buf.size(), cfxFloat32, schedule.workerOf(a.vstage + 1, a.microbatch), comm, nullptr);
          break;
        }
        default: break;
      }
    }
    cfxResult_t ended = cfxGroupEnd();
    check(posted, "pipeline send/recv", comm);
    check(ended, "pipeline send/recv group", comm);
    account();
    for (const Cell& c : sentActs) actOut.erase(c);
    for (const Cell& c : sentGrads) gradOut.erase(c);
    result.commSeconds += since(t0);
  }

  void forward(const Action& a) {
    const auto t0 = Clock::now();
    const int nv = schedule.virtualStages();
    const Cell c{a.microbatch, a.vstage};
    const float* in = a.vstage > 0 ? take(actIn, c, "input activation").data() : nullptr;
    float* out = nullptr;
    if (a.vstage + 1 < nv) {
      auto& buf = actOut[c];
      buf.assign(sizeOf(a.vstage), 0.0f);
      out = buf.data();
    }
    account();
    const float loss = fns.forward(a.vstage, a.microbatch, in, out, !opts.recompute);
    if (a.vstage + 1 == nv) result.losses[static_cast<size_t>(a.microbatch)] = loss;
    if (!opts.recompute && a.vstage > 0) actIn.erase(c);
    result.computeSeconds += since(t0);
  }

  // kBackward, or kBackwardInput (split = true).
  void backward(const Action& a, bool split) {
    const auto t0 = Clock::now();
    const int nv = schedule.virtualStages();
    const Cell c{a.microbatch, a.vstage};
    if (opts.recompute) {
      const float* in = a.vstage > 0 ? take(actIn, c, "kept input activation").data() : nullptr;
      std::vector<float> scratch(a.vstage + 1 < nv ? sizeOf(a.vstage) : 0);
      fns.forward(a.vstage, a.microbatch, in, scratch.empty() ? nullptr : scratch.data(), true);
      if (a.vstage > 0) actIn.erase(c);
    }
    const float* dout = a.vstage + 1 < nv ? take(gradIn, c, "output gradient").data() : nullptr;
    float* din = nullptr;
    if (a.vstage > 0) {
      auto& buf = gradOut[c];
      buf.assign(sizeOf(a.vstage - 1), 0.0f);
      din = buf.data();
    }
    account();
    (split && fns.backwardInput ? fns.backwardInput : fns.backward)(a.vstage, a.microbatch, dout, din);
    if (a.vstage + 1 < nv) gradIn.erase(c);
    result.computeSeconds += since(t0);
  }

  void backwardWeight(const Action& a) {
    if (!fns.backwardWeight) return;
    const auto t0 = Clock::now();
    fns.backwardWeight(a.vstage, a.microbatch);
    result.computeSeconds += since(t0);
  }

  void update(size_t index, const Action& a) {
    const auto t0 = Clock::now();
    stash->beforeUpdate(index);
    fns.update(a.version);
    stash->afterUpdate(a.version);
    ++result.updates;
    result.computeSeconds += since(t0);
  }

  void compute(size_t index, const Action& a) {
    WeightStash::Use weights(*stash, index, a.version);
    switch (a.op) {
      case Op::kForward: forward(a); break;
      case Op::kBackward: backward(a, false); break;
      case Op::kBackwardInput: backward(a, true); break;
      case Op::kBackwardWeight: backwardWeight(a); break;
      default: break;
    }
  }
};

Executor::Executor(cfxComm_t comm, Schedule schedule, StageFunctions functions, ExecutorOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) throw Error(cfxInvalidArgument, "pipeline Executor: comm is NULL");
  if (!functions.activationSize || !functions.forward || !functions.backward) {
    throw Error(cfxInvalidArgument, "pipeline Executor: activationSize, forward and backward must all be set");
  }
  impl_->report = validate(schedule);
  int n = 0, rank = 0;
  check(cfxCommCount(comm, &n), "cfxCommCount", comm);
  check(cfxCommUserRank(comm, &rank), "cfxCommUserRank", comm);
  if (n != schedule.workers()) {
    const bool replicated = !schedule.replicas.empty();
    throw Error(cfxInvalidArgument, "pipeline Executor: " + schedule.name + " has " + std::to_string(schedule.workers()) +
                                        (replicated ? " workers" : " stages") + " but the communicator has " +
                                        std::to_string(n) + " ranks");
  }
  const auto& list = schedule.actions[static_cast<size_t>(rank)];
  const bool updates = std::any_of(list.begin(), list.end(), [](const Action& a) { return a.op == Op::kUpdate; });
  if (updates && !functions.update) {
    throw Error(cfxInvalidArgument, "pipeline Executor: " + schedule.name + " updates weights inside the run, so StageFunctions::update must be set");
  }
  if (updates && options.recompute) {
    throw Error(cfxInvalidArgument, "pipeline Executor: recomputation is not supported with weight updates inside the run");
  }
  impl_->stash.emplace(list, functions.parameters);
  impl_->comm = comm;
  impl_->schedule = std::move(schedule);
  impl_->fns = std::move(functions);
  impl_->opts = options;
  impl_->worker = rank;
  impl_->stage = impl_->schedule.stageOfWorker(rank);
}

Executor::~Executor() = default;

const Schedule& Executor::schedule() const { return impl_->schedule; }
const ScheduleReport& Executor::report() const { return impl_->report; }
int Executor::stage() const { return impl_->stage; }
int Executor::worker() const { return impl_->worker; }

std::vector<int> Executor::virtualStages() const {
  std::vector<int> out;
  for (int vs = impl_->stage; vs < impl_->schedule.virtualStages(); vs += impl_->schedule.stages) out.push_back(vs);
  return out;
}

StepResult Executor::run() {
  Impl& d = *impl_;
  d.actIn.clear();
  d.actOut.clear();
  d.gradIn.clear();
  d.gradOut.clear();
  d.result = StepResult{};
  const bool last = d.schedule.stageOf(d.schedule.virtualStages() - 1) == d.stage;
  d.result.losses.assign(last ? static_cast<size_t>(d.schedule.microbatches) : 0, 0.0f);
  const auto t0 = Clock::now();
  d.stash->reset();
  const auto& list = d.schedule.actions[static_cast<size_t>(d.worker)];
  size_t i = 0;
  try {
    while (i < list.size()) {
      const Action& a = list[i];
      if (isComm(a.op)) {
        size_t end = i;
        while (end < list.size() && isComm(list[end].op)) ++end;
        d.communicate(list, i, end);
        i = end;
      } else {
        if (a.op == Op::kUpdate) {
          d.update(i, a);
        } else {
          d.compute(i, a);
        }
        ++i;
      }
    }
  } catch (...) {
    // A failed transfer or a failed callback: abort, so the neighbours waiting on this stage
    // fail now rather than at their timeout.
    (void)cfxCommAbort(d.comm);
    throw;
  }
  d.result.seconds = since(t0);
  d.result.peakStashedBytes = d.stash->peakBytes();
  return d.result;
}

}  // namespace conflux::train::pipeline
