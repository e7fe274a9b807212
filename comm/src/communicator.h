// A communicator: its ranks, its shared-memory context and its progress engine. Created by
// init() over the bootstrap, or by split() over a parent communicator.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "context.h"
#include "engine.h"
#include "ops/tuning.h"

namespace conflux {

class Communicator {
 public:
  struct Options {
    int timeoutMs = -1;  // > 0 overrides CFX_TIMEOUT
  };

  static std::unique_ptr<Communicator> init(const bootstrap::UniqueIdData& id, int nranks, int rank, Options opts);
  // Collective over this communicator. Returns nullptr for color == CFX_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, Options opts);

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return ctx_->rank(); }
  int size() const { return ctx_->size(); }
  Context& context() { return *ctx_; }
  Engine& engine() { return *engine_; }
  const Tuning& tuning() const { return tuning_; }
  // Makes every pending and future operation fail with kAborted (callable from any thread).
  void abort() { ctx_->abort(); }

 private:
  Communicator(uint64_t hash, std::vector<pid_t> pids, int rank, shm::Segment segment, Options opts);
  // Runs a blocking int32 collective on this communicator (used by split).
  void runInternal(Coll coll, const void* send, void* recv, size_t count, cfxRedOp_t op);

  uint64_t hash_;
  std::vector<pid_t> pids_;
  uint64_t splits_ = 0;
  Tuning tuning_;
  std::unique_ptr<Context> ctx_;    // declared before the engine: the engine's thread uses it
  std::unique_ptr<Engine> engine_;
};

}  // namespace conflux
