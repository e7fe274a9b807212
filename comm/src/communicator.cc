#include "communicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <new>

#include "bootstrap/client.h"
#include "ops/call_tag.h"
#include "ops/select.h"
#include "reduce/kernels.h"
#include "common/env.h"
#include "common/log.h"
#include "shm_layout.h"
#include "topology/cpus.h"
#include "topology/discover.h"
#include "topology/host_id.h"
#include "topology/placement.h"
#include "topology/report.h"
#include "transport/net/select.h"

namespace conflux {

namespace {
// Whether each rank of this host (`mates`) can have a CPU of its own, from the CPUs each may run
// on. Every rank's binding is final by now: form() binds before the segment's last barrier, and
// a split or shrink keeps the bindings of init.
bool localRanksHaveCpus(const std::vector<int>& mates, const std::vector<pid_t>& pids, int self) {
  std::vector<std::vector<int>> cpus;
  for (int r : mates) {
    std::vector<int> c = r == self ? topology::usableCpus() : topology::cpusOf(pids[static_cast<size_t>(r)]);
    cpus.push_back(c.empty() ? topology::usableCpus() : std::move(c));  // unreadable: assume ours
  }
  return topology::eachHasOwnCpu(cpus);
}
}  // namespace

Communicator::Communicator(uint64_t hash, int rank, std::vector<pid_t> pids, HostMap hosts, shm::Segment segment,
                           std::shared_ptr<const topology::Topology> topo, topology::Plan plan,
                           topology::RankPlan self, Options opts)
    : hash_(hash),
      rank_(rank),
      pids_(std::move(pids)),
      hosts_(std::move(hosts)),
      topo_(std::move(topo)),
      plan_(std::move(plan)),
      self_(std::move(self)) {
  const int host = hosts_.hostOf[rank_];
  const auto& mates = hosts_.ranksOn[host];
  const bool ownCpus = localRanksHaveCpus(mates, pids_, rank_);
  tuning_ = Tuning::fromEnv(ownCpus);
  reduceExact_ = opts.reduceExact >= 0 ? opts.reduceExact == 1 : env::getInt("CFX_REDUCE_EXACT") != 0;
  // Registered buffers serve the shared-memory collectives of one host (ops/zero_copy.h).
  if (hosts_.nhosts() > 1) tuning_.registered = false;
  std::vector<pid_t> localPids;
  for (int r : mates) localPids.push_back(pids_[r]);
  ctx_ = std::make_unique<Context>(std::move(segment), hosts_.localRankOf[rank_], std::move(localPids),
                                   WaitSettings::fromEnv(opts.timeoutMs, ownCpus));
  ctx_->setCommRanks(mates);
  tuning_.domains = ctx_->domains();
  if (int64_t entries = env::getInt("CFX_FLIGHT_RECORDER_ENTRIES"); entries > 0) {
    recorder_ = std::make_unique<flight::Recorder>(flight::Identity{hash_, rank_, hosts_.nranks(), hosts_.label(host), host},
                                                   static_cast<size_t>(entries));
    flightRegistration_ = std::make_unique<flight::Registration>(recorder_.get());
  }
  engine_ = std::make_unique<Engine>(*ctx_, [this](const Outcome& o) {
    if (failureSink_) failureSink_(o.message);
    if (recorder_) {
      recorder_->failAll(o.message);
      flight::dumpOnFailure(*recorder_);
    }
    // Tell everyone at once: the local ranks through the segment (a rank whose last calls waited
    // for no one, such as Broadcast's root, learns of a mismatch found by its readers this way),
    // the remote ones by closing the connections.
    ctx_->health().poison(o.status, o.message);
    if (!transport_) return;
    // The peers attribute the notice to this rank (transport/net/notice.h), and to its call.
    transport_->shutdown(o.message, o.status, o.failedCall);
  }, recorder_.get());
  hier_.hosts = &hosts_;
  hier_.tuning = &tuning_;
  hier_.rank = rank_;
  hier_.nranks = hosts_.nranks();
  hier_.net.hosts = &hosts_;
  hier_.net.rank = rank_;
}

Communicator::~Communicator() {
  // Operations still queued on the engine may use the transport: let them finish first.
  engine_.reset();
}

void Communicator::abort() {
  ctx_->health().abort();
  if (transport_) transport_->shutdown("it aborted its communicator");
}

std::vector<std::string> Communicator::checkedBlobs(std::vector<std::string> blobs, const char* step) const {
  for (int r = 0; r < static_cast<int>(blobs.size()); ++r) {
    if (!blobs[r].empty() && blobs[r][0] == setup::kFailedBlob) {
      throw Error(Status::kRemoteError, hosts_.describe(r) + " could not " + step + ": " + blobs[r].substr(1));
    }
  }
  return blobs;
}

void Communicator::connectNetwork(const Exchange& exchange, std::chrono::milliseconds timeout) {
  net::NetChoice choice = net::chooseNet();
  netReason_ = choice.name + " (" + choice.reason + ")";
  net::TransportSetup setup;
  setup.rank = rank_;
  setup.nranks = size();
  for (int r = 0; r < size(); ++r) {
    if (r != rank_) setup.peers.push_back(r);
  }
  setup.commHash = hash_;
  setup.connectTimeout = timeout;
  bool exchanged = false;
  setup.exchange = [&](const std::string& mine) {
    exchanged = true;
    return checkedBlobs(exchange(mine), "set up its network transport");
  };
  Context* ctx = ctx_.get();
  setup.wake = [ctx] { ctx->myBell().ring(); };
  const HostMap* hosts = &hosts_;
  setup.describeRank = [hosts](int r) { return hosts->describe(r); };
  setup.describeCall = [](const net::CallTag& t) { return describeCallTag(t); };
  if (self_.nic >= 0) {
    setup.nic = topo_->nics[self_.nic].name;
    setup.nicIsRdma = topo_->nics[self_.nic].kind != topology::NicKind::kEth;
  }
  try {
    transport_ = net::createTransport(choice, setup);
  } catch (const Error& e) {
    if (!exchanged) exchange(std::string(1, setup::kFailedBlob) + e.what());
    throw;
  }
  hier_.net.transport = transport_.get();
  logInfo("NET rank " + std::to_string(rank_) + ": " + netReason_);
}

void Communicator::logInit(const std::string& binding) const {
  if (log::enabled(log::Level::kInfo)) {
    if (ctx_->rank() == 0) {
      logInfo("TOPO " + topology::describeTopology(*topo_).front());
      for (const auto& line : topology::describePlan(*topo_, plan_)) logInfo("TOPO " + line);
    }
    logInfo("TOPO rank " + std::to_string(rank_) + " " + topology::describeRank(*topo_, self_) + "; " + binding +
            (ctx_->domains() >= 2 ? "; two-level reduction over " + std::to_string(ctx_->domains()) + " NUMA domains"
                                  : "; flat reduction") +
            "; waits: spin " + std::to_string(ctx_->wait().spin) + " polls, then " + std::to_string(ctx_->wait().yields) +
            " yields");
  }
  std::string where = hosts_.nhosts() == 1
                          ? std::string("transport shm (all ranks on one host)")
                          : "hosts " + std::to_string(hosts_.nhosts()) + ", local ranks " +
                                std::to_string(ctx_->size()) + ", shm inside the host, " + netReason_ + " between hosts";
  logInfo("Conflux version " + std::to_string(CFX_MAJOR) + "." + std::to_string(CFX_MINOR) + "." +
          std::to_string(CFX_PATCH) + ": comm " + bootstrap::hex(reinterpret_cast<const uint8_t*>(&hash_), 8) +
          " rank " + std::to_string(rank_) + " nranks " + std::to_string(size()) + " pid " + std::to_string(getpid()) +
          " " + where + " - Init COMPLETE; " + tuning_.describe());
}

std::unique_ptr<Communicator> Communicator::init(const bootstrap::UniqueIdData& id, int nranks, int rank,
                                                 Options opts) {
  bootstrap::Client client = bootstrap::Client::join(id, nranks, rank, setup::bootstrapTimeout());
  // Every rank finds the topology and makes the plan for its host (the same plan on each); each
  // host's first rank creates, sizes and places the segment from it (and alone writes
  // CFX_TOPO_DUMP_FILE).
  auto prepare = [rank](Setup& s, const HostMap& hosts) {
    const int localRank = hosts.localRankOf[rank];
    const int localRanks = static_cast<int>(hosts.ranksOn[hosts.hostOf[rank]].size());
    s.topo = std::make_shared<const topology::Topology>(topology::discover(localRank == 0));
    s.plan = topology::makePlan(*s.topo, localRanks, topology::PlanOptions::fromEnv());
    s.self = s.plan.ranks[localRank];
    s.segment = setup::segmentPlanOf(s.plan);
  };
  // Bind as planned (a thread the caller starts later inherits it; Conflux's own threads start
  // after this).
  auto bind = [](Setup& s) {
    s.binding = "not bound (CFX_BIND=" + std::string(topology::bindName(s.plan.bind)) + ")";
    if (!s.self.cpus.empty()) {
      topology::BindResult b = topology::bindCallingThread(s.self.cpus);
      s.binding = b.cpus.empty() ? b.note
                                 : "bound to CPUs " + topology::cpuList(b.cpus) + (b.note.empty() ? "" : " (" + b.note + ")");
    }
  };
  return form(client, id.secret, rank, opts, prepare, bind);
}

std::unique_ptr<Communicator> Communicator::form(bootstrap::Client& client, const bootstrap::Secret& secret, int rank,
                                                 Options opts,
                                                 const std::function<void(Setup&, const HostMap&)>& prepare,
                                                 const std::function<void(Setup&)>& bind) {
  std::vector<std::string> hostIds;
  std::vector<pid_t> pids;
  for (const auto& p : client.peers()) {
    hostIds.push_back(p.hostId);
    pids.push_back(p.pid);
  }
  HostMap hosts = HostMap::build(hostIds);
  const bool leader = hosts.localRankOf[rank] == 0;
  const uint64_t hash = bootstrap::hash64(secret.data(), secret.size());
  shm::Segment segment;
  Setup s;
  // Everyone learns whether the preparation and the leaders' segments worked.
  Outcome created = setup::capture([&] {
    prepare(s, hosts);
    if (leader) segment = setup::createSegment(hash, s.segment);
  });
  client.barrier(created).raise();
  // The others attach; the leader unlinks the name once all have, so nothing outlives a crash.
  Outcome attached = leader ? Outcome{} : setup::capture([&] { segment = shm::Segment::open(setup::segmentName(hash)); });
  // Before the barrier: past it, every rank's CPUs are final (the wait settings depend on them).
  if (bind && attached.ok()) attached = setup::capture([&] { bind(s); });
  client.barrier(attached).raise();
  if (leader) segment.unlink();

  const bool multiHost = hosts.nhosts() > 1;
  std::unique_ptr<Communicator> comm(new Communicator(hash, rank, std::move(pids), std::move(hosts),
                                                      std::move(segment), s.topo, s.plan, s.self, opts));
  comm->localNuma_ = s.segment.rankNuma;
  // The rendezvous sockets, at the address each rank reached the root from.
  Outcome listening = setup::capture([&] { comm->rendezvous_ = Rendezvous(client.localAddress(), secret); });
  comm->rendezvous_.setPeers(comm->checkedBlobs(
      client.exchange(listening.ok() ? comm->rendezvous_.address() : setup::kFailedBlob + listening.message),
      "open its rendezvous socket"));
  if (multiHost) {
    Outcome net = setup::capture([&] {
      comm->connectNetwork([&](const std::string& mine) { return client.exchange(mine); }, setup::bootstrapTimeout());
    });
    client.barrier(net).raise();
  }
  client.finish();
  comm->logInit(s.binding);
  return comm;
}

std::unique_ptr<Op> Communicator::recorded(std::unique_ptr<Op> op, const flight::Call& call) const {
  if (recorder_) op->flightId = recorder_->add(call);
  return op;
}

cfxRedOp_t Communicator::effectiveOp(cfxRedOp_t op, cfxDataType_t type) const {
  if (reduceExact_ && (op == cfxSum || op == cfxAvg)) op = op == cfxSum ? cfxSumExact : cfxAvgExact;
  return reduce::isFloatType(type) ? op : reduce::plainOp(op);
}

namespace {
flight::Call flightCallOf(const CollArgs& a, const char* flightName) {
  return flight::Call{flightName ? flightName : collectiveName(static_cast<int32_t>(a.coll)), a.count, a.datatype,
                      reduces(a.coll) ? a.op : -1, a.root};
}
}  // namespace

std::unique_ptr<Op> Communicator::collective(const CollArgs& a, const char* flightName) const {
  const flight::Call call = flightCallOf(a, flightName);
  if (!transport_) return recorded(makeCollective(a, tuning_, size()), call);
  const uint32_t callSeq = calls_.fetch_add(1, std::memory_order_relaxed) + 1;
  return recorded(hier::makeHierCollective(a, hier_, callSeq), call);
}

std::unique_ptr<Op> Communicator::send(const void* buf, size_t bytes, int peer, bool ofCollective) const {
  flight::Call call{"Send", bytes, -1, -1, peer, true, false};
  const bool single = ofCollective ? tuning_.collectiveSingleCopy(bytes) : tuning_.p2pSingleCopy(bytes);
  if (!transport_) return recorded(makeSend(buf, bytes, peer, -1, peer != rank() && single), call);
  return recorded(hier::makeHierSend(hier_, buf, bytes, peer), call);
}

std::unique_ptr<Op> Communicator::recv(void* buf, size_t bytes, int peer) const {
  flight::Call call{"Recv", bytes, -1, -1, peer, true, true};
  if (!transport_) return recorded(makeRecv(buf, bytes, peer), call);
  return recorded(hier::makeHierRecv(hier_, buf, bytes, peer), call);
}

std::optional<P2pOp> Communicator::quickSend(const void* buf, size_t bytes, int peer) const {
  if (transport_ || bytes > P2pOp::kQuickBytes || (peer != rank() && tuning_.p2pSingleCopy(bytes))) return std::nullopt;
  return P2pOp::send(buf, bytes, peer, peer, false);
}

std::optional<P2pOp> Communicator::quickRecv(void* buf, size_t bytes, int peer) const {
  if (transport_ || bytes > P2pOp::kQuickBytes) return std::nullopt;
  return P2pOp::recv(buf, bytes, peer, peer);
}

std::unique_ptr<Op> Communicator::recordQuick(const P2pOp& op) const {
  return recorded(std::make_unique<P2pOp>(op), op.flightCall());
}

void Communicator::runInternal(Coll coll, const void* send, void* recv, size_t count, cfxRedOp_t op,
                               cfxDataType_t type) {
  Batch b;
  b.ops.push_back(collective(CollArgs{coll, send, recv, count, type, op, -1}));
  engine_->runBlocking(std::move(b)).raise();
}

bool Communicator::quickCollective(const CollArgs& a, Stream* stream, Outcome& out) {
  if (transport_ || !takesMailbox(a, tuning_, size())) return false;
  MailboxOp op(a, size());
  return engine_->runQuick(op, flightCallOf(a, nullptr), stream, out);
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, Options opts) {
  const int n = size();
  const int me = rank();
  // 1. Everyone learns every rank's (color, key, NUMA node of its plan).
  int32_t mine[3] = {color, key, self_.numa};
  std::vector<int32_t> all(3 * static_cast<size_t>(n));
  runInternal(Coll::kAllGather, mine, all.data(), 3, cfxSum);

  // 2. Members of each color, ordered by (key, parent rank); does any new communicator span hosts?
  auto membersOf = [&](int c) {
    std::vector<int> m;
    for (int r = 0; r < n; ++r) {
      if (all[3 * r] == c) m.push_back(r);
    }
    std::stable_sort(m.begin(), m.end(), [&](int a, int b) { return all[3 * a + 1] < all[3 * b + 1]; });
    return m;
  };
  bool anyMultiHost = false;
  for (int r = 0; r < n && !anyMultiHost; ++r) {
    if (all[3 * r] == CFX_SPLIT_NOCOLOR) continue;
    for (int q : membersOf(all[3 * r])) anyMultiHost |= hosts_.hostOf[q] != hosts_.hostOf[r];
  }
  const bool member = color != CFX_SPLIT_NOCOLOR;
  std::vector<int> members = member ? membersOf(color) : std::vector<int>{};
  uint64_t seed[3] = {hash_, ++splits_, static_cast<uint64_t>(static_cast<uint32_t>(color))};
  uint64_t newHash = bootstrap::hash64(seed, sizeof(seed));
  int newRank = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  std::vector<std::string> hostIds;
  std::vector<pid_t> pids;
  for (int r : members) {
    hostIds.push_back(hosts_.names[hosts_.hostOf[r]]);
    pids.push_back(pids_[r]);
  }
  HostMap newHosts = HostMap::build(hostIds);
  bool leader = member && newHosts.localRankOf[newRank] == 0;
  // The new communicator's ranks keep the binding of their init: its segment follows their nodes.
  setup::SegmentPlan segPlan;
  if (member) {
    std::vector<int> numa;
    for (int nr : newHosts.ranksOn[newHosts.hostOf[newRank]]) numa.push_back(all[3 * members[nr] + 2]);
    segPlan = setup::segmentPlanFor(plan_, std::move(numa));
  }

  // 3. Leaders create, then the others attach; the parent's collectives act as status barriers
  //    (every parent rank takes part, including those that join no new communicator).
  shm::Segment segment;
  auto statusBarrier = [&](const Outcome& o, const char* step) {
    int32_t failed = o.ok() ? 0 : me + 1, anyFailed = 0;
    runInternal(Coll::kAllReduce, &failed, &anyFailed, 1, cfxMax);
    if (!o.ok()) throw Error(o.status, "cfxCommSplit: " + o.message);
    if (anyFailed != 0) {
      throw Error(Status::kRemoteError, std::string("cfxCommSplit: rank ") + std::to_string(anyFailed - 1) +
                                            " failed to " + step + " (see that rank's error)");
    }
  };
  statusBarrier(leader ? setup::capture([&] { segment = setup::createSegment(newHash, segPlan); }) : Outcome{},
                "create its shared memory");
  statusBarrier(member && !leader ? setup::capture([&] { segment = shm::Segment::open(setup::segmentName(newHash)); })
                                  : Outcome{},
                "attach its shared memory");
  if (leader) segment.unlink();

  std::unique_ptr<Communicator> comm;
  if (member) {
    comm.reset(new Communicator(newHash, newRank, std::move(pids), std::move(newHosts), std::move(segment), topo_, plan_,
                                self_, opts));
    comm->localNuma_ = segPlan.rankNuma;
  }
  // 4. Each member opens its rendezvous socket, and new communicators that span hosts connect
  //    their networks; addresses travel in all-gathers over the parent, in each of which every
  //    parent rank takes part exactly once.
  constexpr size_t kRecord = 4 + net::kMaxAddressBytes;
  auto exchange = [&](const std::string& blob) {
    std::vector<uint8_t> rec(kRecord, 0), recs(kRecord * n);
    uint32_t len = static_cast<uint32_t>(std::min(blob.size(), net::kMaxAddressBytes));
    std::memcpy(rec.data(), &len, 4);
    std::memcpy(rec.data() + 4, blob.data(), len);
    runInternal(Coll::kAllGather, rec.data(), recs.data(), kRecord, cfxSum, cfxUint8);
    std::vector<std::string> out;
    for (int r : members) {
      uint32_t l;
      std::memcpy(&l, recs.data() + r * kRecord, 4);
      out.emplace_back(reinterpret_cast<const char*>(recs.data() + r * kRecord + 4),
                       std::min<size_t>(l, net::kMaxAddressBytes));
    }
    return out;
  };
  Outcome listening;
  if (comm) {
    listening = setup::capture([&] {
      comm->rendezvous_ = Rendezvous(rendezvous_.host(), rendezvous_.derive(setup::kSplitSecret, splits_, static_cast<uint32_t>(color)));
    });
  }
  std::vector<std::string> addresses =
      exchange(!comm ? std::string() : listening.ok() ? comm->rendezvous_.address() : setup::kFailedBlob + listening.message);
  if (comm) {
    listening = setup::capture([&] { comm->rendezvous_.setPeers(comm->checkedBlobs(addresses, "open its rendezvous socket")); });
  }
  statusBarrier(listening, "open its rendezvous socket");
  if (anyMultiHost) {
    bool took = false;
    auto once = [&](const std::string& blob) {
      took = true;
      return exchange(blob);
    };
    Outcome net;
    if (comm && comm->hosts_.nhosts() > 1) net = setup::capture([&] { comm->connectNetwork(once, setup::bootstrapTimeout()); });
    if (!took) exchange("");
    statusBarrier(net, "connect its network");
  }
  if (comm) comm->logInit("binding kept from init");
  return comm;
}

}  // namespace conflux
