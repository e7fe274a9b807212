#include "api/group.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "api/handle.h"
#include "communicator.h"
#include "executor.h"
#include "stream.h"

namespace conflux::api {

namespace {

// Where an operation of the group goes.
struct Target {
  cfxComm_t comm;
  cfxStream_t stream;
};

struct GroupState {
  int depth = 0;
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<Target> targets;  // targets[i] is ops[i]'s
  Outcome error;
  // Small sends and receives kept as values (Communicator::quickSend/quickRecv) while the group
  // holds nothing else, all for one communicator and stream: cfxGroupEnd runs them on this thread
  // (Engine::runQuick). Anything else added turns them into operations first, in order.
  std::vector<P2pOp> quick;
  Target quickTarget{};
  Communicator* quickImpl = nullptr;
};

// This thread's group. A thread_local with a constructor costs an initialisation check on every
// access from a shared library; the plain pointer costs one lookup, and the state is made once.
// The pointer takes the initial-exec model: a load at a fixed offset from the thread pointer, where
// the default model calls __tls_get_addr (four times per Send/Recv group). Its 8 bytes come from
// the static TLS that glibc reserves for libraries loaded later (the Python backend dlopens this one).
GroupState& threadGroup() {
  thread_local GroupState* cached __attribute__((tls_model("initial-exec"))) = nullptr;
  if (cached == nullptr) {
    thread_local GroupState state;
    cached = &state;
  }
  return *cached;
}

// The group's quick values become operations (with their flight records) at the end of `ops`.
void spillQuick(const GroupState& g, std::vector<P2pOp>& quick, std::vector<std::unique_ptr<Op>>& ops,
                std::vector<Target>& targets) {
  for (const P2pOp& q : quick) {
    ops.push_back(g.quickImpl->recordQuick(q));
    targets.push_back(g.quickTarget);
  }
  quick.clear();
}

void addTo(GroupState& g, cfxComm_t comm, cfxStream_t stream, std::unique_ptr<Op> op) {
  if (!g.quick.empty()) spillQuick(g, g.quick, g.ops, g.targets);
  g.ops.push_back(std::move(op));
  g.targets.push_back(Target{comm, stream});
}

struct CommBatch {
  cfxComm_t comm;
  Batch batch;
  bool blocking = false;
};

std::vector<CommBatch> batchesByComm(std::vector<std::unique_ptr<Op>>& ops, const std::vector<Target>& targets) {
  std::vector<CommBatch> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Target& t = targets[i];
    auto it = std::find_if(out.begin(), out.end(), [&](const CommBatch& b) { return b.comm == t.comm; });
    if (it == out.end()) it = out.insert(out.end(), CommBatch{t.comm, {}, false});
    it->batch.ops.push_back(std::move(ops[i]));
    if (t.stream == nullptr) {
      it->blocking = true;
    } else {
      auto* s = static_cast<Stream*>(t.stream);
      if (std::find(it->batch.streams.begin(), it->batch.streams.end(), s) == it->batch.streams.end()) {
        it->batch.streams.push_back(s);
      }
    }
  }
  return out;
}

// Runs each communicator's batch of a group; throws the first failure.
void runBatches(std::vector<CommBatch>& batches, const std::vector<std::unique_ptr<CommRef>>& refs) {
  if (batches.size() == 1 && batches[0].blocking) {
    (*refs[0])->engine().runBlocking(std::move(batches[0].batch)).raise();
    return;
  }
  // Several communicators: all batches go to their progress threads at once, so operations on
  // different communicators that depend on each other cannot deadlock, then we wait.
  std::vector<std::shared_ptr<Completion>> waits;
  for (size_t i = 0; i < batches.size(); ++i) {
    auto done = batches[i].blocking ? std::make_shared<Completion>() : nullptr;
    (*refs[i])->engine().enqueue(std::move(batches[i].batch), done);
    if (done) waits.push_back(done);
  }
  Outcome first;
  for (auto& w : waits) {
    Outcome o = w->wait();
    if (first.ok() && !o.ok()) first = o;
  }
  first.raise();
}

// The common case (a thread's Send/Recv pairs on one communicator, on one stream or none): the
// engine runs the group's own vector of operations, with no batch built unless they must wait.
bool singleTarget(const std::vector<Target>& targets) {
  for (const auto& t : targets) {
    if (t.comm != targets[0].comm || t.stream != targets[0].stream) return false;
  }
  return true;
}

void runSingleTarget(std::vector<std::unique_ptr<Op>>& ops, const Target& target) {
  CommRef ref(target.comm);
  try {
    if (target.stream == nullptr) {
      ref->engine().runBlocking(std::span<std::unique_ptr<Op>>(ops)).raise();
    } else {
      ref->engine().enqueue(std::span<std::unique_ptr<Op>>(ops), static_cast<Stream*>(target.stream));
    }
  } catch (const Error& e) {
    recordError(target.comm, std::string("cfxGroupEnd: ") + e.what());
    throw;
  }
}

// Runs the group's quick values on the caller's thread. False when the engine cannot take them
// now (nothing ran); throws the failure of a blocking group.
bool runQuickGroup(std::vector<P2pOp>& quick, const Target& target) {
  CommRef ref(target.comm);
  Outcome out;
  if (!ref->engine().runQuick(quick, static_cast<Stream*>(target.stream), out)) return false;
  if (!out.ok()) {
    recordError(target.comm, std::string("cfxGroupEnd: ") + out.message);
    out.raise();
  }
  return true;
}

}  // namespace

bool inGroup() { return threadGroup().depth > 0; }

void groupStart() { ++threadGroup().depth; }

void groupFail(const Outcome& error) {
  GroupState& g = threadGroup();
  if (g.error.ok()) g.error = error;
}

void groupEnd() {
  GroupState& g = threadGroup();
  if (g.depth == 0) throw Error(Status::kInvalidUsage, "cfxGroupEnd without a matching cfxGroupStart");
  if (--g.depth > 0) return;
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<Target> targets;
  std::vector<P2pOp> quick;
  ops.swap(g.ops);
  targets.swap(g.targets);
  quick.swap(g.quick);
  if (!g.error.ok()) {
    Outcome error = std::exchange(g.error, Outcome{});
    throw Error(error.status, "group not run: " + error.message);
  }
  if (!quick.empty()) {  // the group holds nothing else
    const bool ran = runQuickGroup(quick, g.quickTarget);
    if (!ran) spillQuick(g, quick, ops, targets);  // the engine is busy: the usual path
    // Keep the capacity for this thread's next group.
    quick.clear();
    if (g.quick.empty()) g.quick.swap(quick);
    if (ran) return;
  }
  if (ops.empty()) return;
  if (singleTarget(targets)) {
    runSingleTarget(ops, targets[0]);
    // Keep the capacity for this thread's next group (the operations ran or were moved out).
    ops.clear();
    targets.clear();
    if (g.ops.empty()) g.ops.swap(ops);
    if (g.targets.empty()) g.targets.swap(targets);
    return;
  }

  std::vector<CommBatch> batches = batchesByComm(ops, targets);
  std::vector<std::unique_ptr<CommRef>> refs;
  for (auto& b : batches) refs.push_back(std::make_unique<CommRef>(b.comm));

  // A failure is also each communicator's last error, not only this thread's: the caller asks
  // cfxGetLastError(comm) of the communicator that failed.
  try {
    runBatches(batches, refs);
  } catch (const Error& e) {
    for (auto& b : batches) recordError(b.comm, std::string("cfxGroupEnd: ") + e.what());
    throw;
  }
}

void submit(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::unique_ptr<Op> op) {
  if (GroupState& g = threadGroup(); g.depth > 0) {
    addTo(g, comm, stream, std::move(op));
    return;
  }
  if (stream == nullptr) {
    impl.engine().runBlocking(std::move(op)).raise();
    return;
  }
  impl.engine().enqueue(std::move(op), static_cast<Stream*>(stream));
}

void submitCollective(cfxComm_t comm, Communicator& impl, cfxStream_t stream, const CollArgs& a) {
  if (threadGroup().depth == 0) {
    Outcome out;
    if (impl.quickCollective(a, static_cast<Stream*>(stream), out)) {
      out.raise();
      return;
    }
  }
  submit(comm, impl, stream, impl.collective(a));
}

bool submitQuick(cfxComm_t comm, Communicator& impl, cfxStream_t stream, const P2pOp& op) {
  GroupState& g = threadGroup();
  if (g.depth == 0 || !g.ops.empty() || g.quick.size() == kQuickOps) return false;
  if (g.quick.empty()) {
    g.quickTarget = Target{comm, stream};
    g.quickImpl = &impl;
  } else if (g.quickTarget.comm != comm || g.quickTarget.stream != stream) {
    return false;
  }
  g.quick.push_back(op);
  return true;
}

void submitVector(cfxComm_t comm, Communicator& impl, cfxStream_t stream, VectorArgs args) {
  if (threadGroup().depth == 0) {
    Outcome out;
    if (runQuickVector(impl, args, static_cast<Stream*>(stream), out)) {
      out.raise();
      return;
    }
  }
  submitAll(comm, impl, stream, makeVectorCollective(impl, std::move(args)));
}

void submitAll(cfxComm_t comm, Communicator& impl, cfxStream_t stream, std::vector<std::unique_ptr<Op>> ops) {
  if (GroupState& g = threadGroup(); g.depth > 0) {
    for (auto& op : ops) addTo(g, comm, stream, std::move(op));
    return;
  }
  if (stream == nullptr) {
    impl.engine().runBlocking(std::span<std::unique_ptr<Op>>(ops)).raise();
    return;
  }
  impl.engine().enqueue(std::span<std::unique_ptr<Op>>(ops), static_cast<Stream*>(stream));
}

}  // namespace conflux::api
