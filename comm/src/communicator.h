// A communicator: its ranks, the hosts they run on, the shared-memory context of this host's
// ranks, the network transport to the other hosts (when there are several), and the progress
// engine. Created by init() over the bootstrap, by split() over a parent communicator, or by
// shrink() over a bootstrap among the survivors of a parent, served by the first survivor.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/client.h"
#include "bootstrap/unique_id.h"
#include "comm_setup.h"
#include "context.h"
#include "engine.h"
#include "flight/dump.h"
#include "flight/recorder.h"
#include "hier/hier_ops.h"
#include "hosts.h"
#include "ops/tuning.h"
#include "rendezvous.h"
#include "scratch_pool.h"
#include "topology/model.h"
#include "topology/plan.h"
#include "transport/net/transport.h"

namespace conflux {

class Communicator {
 public:
  struct Options {
    int timeoutMs = -1;  // > 0 overrides CFX_TIMEOUT
    int reduceExact = -1;  // 0 or 1 overrides CFX_REDUCE_EXACT
  };

  static std::unique_ptr<Communicator> init(const bootstrap::UniqueIdData& id, int nranks, int rank, Options opts);
  // Collective over this communicator. Returns nullptr for color == CFX_SPLIT_NOCOLOR.
  std::unique_ptr<Communicator> split(int color, int key, Options opts);
  // The ranks not in `excluded` (sorted, valid, without this rank) form a new communicator, ranked
  // in their order, over a bootstrap whose root the first of them serves on its rendezvous
  // socket: no collective of this communicator is used, so it works after a failure. `abortFirst`:
  // pending work is aborted first (CFX_SHRINK_ABORT); else it completes first.
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excluded, bool abortFirst, Options opts);
  // The ranks whose processes are gone: on this host by their pids, on others by their rendezvous
  // sockets (a refused connection, or none within `probeTimeout`). Ascending.
  std::vector<int> failedRanks(std::chrono::milliseconds probeTimeout) const;

  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return hosts_.nranks(); }
  Context& context() { return *ctx_; }
  Engine& engine() { return *engine_; }
  const Tuning& tuning() const { return tuning_; }
  // cfxSum and cfxAvg on floating-point data are exact on this communicator (cfxConfig_t::reduceExact).
  bool reduceExact() const { return reduceExact_; }
  // The op a call runs: the exact one where it was asked for, by the call or by the communicator;
  // the plain one on integer data, which is exact already.
  cfxRedOp_t effectiveOp(cfxRedOp_t op, cfxDataType_t type) const;
  const HostMap& hosts() const { return hosts_; }
  // Temporaries kept between calls (scratch_pool.h).
  ScratchPool& scratch() const { return *scratch_; }
  const topology::Topology& topology() const { return *topo_; }
  // The plan for this host's ranks (init), or the parent's (split: ranks keep their binding).
  const topology::Plan& plan() const { return plan_; }

  // The operations for a call: shared memory on one host, hierarchical across hosts.
  // `flightName`: what the flight recorder calls it, when not the collective's own name.
  std::unique_ptr<Op> collective(const CollArgs& a, const char* flightName = nullptr) const;
  // `ofCollective`: a block of a v-collective, which takes the single copy as AlltoAll does
  // (CFX_CMA, CFX_CMA_MIN_BYTES) rather than as Send does (CFX_P2P_CMA_MIN_BYTES).
  std::unique_ptr<Op> send(const void* buf, size_t bytes, int peer, bool ofCollective = false) const;
  std::unique_ptr<Op> recv(void* buf, size_t bytes, int peer) const;
  // Whether every rank is on this host: operations need no network (collective, send and recv
  // then make shared-memory operations).
  bool onOneHost() const { return transport_ == nullptr; }
  // Enters `op`, made here or elsewhere for a call, in the flight recorder (when it is on).
  std::unique_ptr<Op> recorded(std::unique_ptr<Op> op, const flight::Call& call) const;
  // The same as values a group may keep and run on the caller's stack (Engine::runQuick), when
  // this rank can: a communicator on one host, a transfer no larger than P2pOp::kQuickBytes, no
  // single copy. Else nullopt. Not recorded yet (recordQuick, or the engine when it runs them).
  std::optional<P2pOp> quickSend(const void* buf, size_t bytes, int peer) const;
  std::optional<P2pOp> quickRecv(void* buf, size_t bytes, int peer) const;
  // A quick transfer that takes the usual path after all, as an operation with its flight record.
  std::unique_ptr<Op> recordQuick(const P2pOp& op) const;
  // A collective outside a group that takes the mailbox path, run as a value on the caller's stack
  // (Engine::runQuick) when this rank can: a communicator on one host, no algorithm forced but the
  // mailbox, an idle engine. Returns false, with nothing run or recorded, otherwise (the caller
  // then takes collective()'s path). Else true, the outcome of a blocking call in `out`.
  bool quickCollective(const CollArgs& a, Stream* stream, Outcome& out);

  // Makes every pending and future operation fail with kAborted (callable from any thread).
  void abort();
  // Where the failure that leaves this communicator failed is reported, whichever thread meets it
  // (a stream's work fails on the progress thread): the public handle's last error. Set once,
  // before the communicator is used.
  void setFailureSink(std::function<void(const std::string&)> sink) { failureSink_ = std::move(sink); }

 private:
  using Exchange = std::function<std::vector<std::string>(const std::string&)>;
  // What init and shrink decide before the segment exists: the topology, the plan, this rank's
  // line of it, how to lay out this host's segment, and (after it is attached) the binding.
  struct Setup {
    std::shared_ptr<const topology::Topology> topo;
    topology::Plan plan;
    topology::RankPlan self;
    setup::SegmentPlan segment;
    std::string binding = "binding kept from init";
  };
  // The steps after the bootstrap's welcome: `prepare` fills the setup (every rank, before this
  // host's leader creates the segment; its failure reaches every rank), `bind` runs once the
  // segment is attached; then the communicator, its rendezvous and network, and the bootstrap's end.
  static std::unique_ptr<Communicator> form(bootstrap::Client& client, const bootstrap::Secret& secret, int rank,
                                            Options opts,
                                            const std::function<void(Setup&, const HostMap&)>& prepare,
                                            const std::function<void(Setup&)>& bind);

  Communicator(uint64_t hash, int rank, std::vector<pid_t> pids, HostMap hosts, shm::Segment segment,
               std::shared_ptr<const topology::Topology> topo, topology::Plan plan, topology::RankPlan self,
               Options opts);
  // Connects to the other ranks over the network (CFX_NET); `exchange` all-gathers addresses.
  void connectNetwork(const Exchange& exchange, std::chrono::milliseconds timeout);
  // Exchanged blobs, each an address or a rank's set-up failure (setup::kFailedBlob): throws
  // Error(kRemoteError) naming the first rank that could not do `step`.
  std::vector<std::string> checkedBlobs(std::vector<std::string> blobs, const char* step) const;
  // Runs a blocking collective on this communicator (used by split).
  void runInternal(Coll coll, const void* send, void* recv, size_t count, cfxRedOp_t op,
                   cfxDataType_t type = cfxInt32);
  void logInit(const std::string& binding) const;

  uint64_t hash_;
  int rank_;
  std::vector<pid_t> pids_;  // of every rank
  HostMap hosts_;
  uint64_t splits_ = 0;
  uint64_t shrinks_ = 0;
  Rendezvous rendezvous_;
  Tuning tuning_;
  std::string netReason_;
  bool reduceExact_ = false;
  std::shared_ptr<const topology::Topology> topo_;
  topology::Plan plan_;
  topology::RankPlan self_;  // this rank's line of the plan made at init (kept through splits)
  std::vector<int> localNuma_;  // the NUMA node of each rank of this host, by local rank
  std::shared_ptr<ScratchPool> scratch_ = std::make_shared<ScratchPool>();
  std::function<void(const std::string&)> failureSink_;
  std::unique_ptr<flight::Recorder> recorder_;  // null when CFX_FLIGHT_RECORDER_ENTRIES=0
  // Collective calls made so far (ops are built in call order, on the calling thread): the call
  // number that messages across hosts carry (hier_ops.h).
  mutable std::atomic<uint32_t> calls_{0};
  std::unique_ptr<flight::Registration> flightRegistration_;
  // Destroyed in reverse order: the engine (which runs operations on the transport and the
  // context) first, then the transport (whose thread wakes the context), then the context.
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<net::Transport> transport_;
  std::unique_ptr<Engine> engine_;
  hier::HierEnv hier_;
};

}  // namespace conflux
