#include "communicator.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "bootstrap/client.h"
#include "common/env.h"
#include "common/log.h"
#include "shm_layout.h"
#include "topology/host_id.h"

namespace conflux {

namespace {

std::string segmentName(uint64_t commHash) {
  std::string host = topology::hostId();
  uint64_t hostHash = bootstrap::hash64(host.data(), host.size());
  char name[64];
  std::snprintf(name, sizeof(name), "cfx-%016llx-%016llx", static_cast<unsigned long long>(commHash),
                static_cast<unsigned long long>(hostHash));
  return name;
}

// Created by the first rank of the host: the segment with its header filled in.
shm::Segment createSegment(uint64_t commHash, int nranks) {
  Layout layout = Layout::fromEnv(nranks);
  shm::Segment seg = shm::Segment::create(segmentName(commHash), layout.totalBytes());
  layout.writeHeader(*reinterpret_cast<SegmentHeader*>(seg.data()));
  return seg;
}

Outcome capture(const std::function<void()>& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return Outcome{e.status(), e.what()};
  }
}

void logCommInfo(uint64_t hash, int rank, int nranks, const Tuning& tuning) {
  logInfo("Conflux version " + std::to_string(CFX_MAJOR) + "." + std::to_string(CFX_MINOR) + "." +
          std::to_string(CFX_PATCH) + ": comm " + bootstrap::hex(reinterpret_cast<const uint8_t*>(&hash), 8) +
          " rank " + std::to_string(rank) + " nranks " + std::to_string(nranks) + " pid " + std::to_string(getpid()) +
          " transport shm (all ranks on one host) - Init COMPLETE; " + tuning.describe(nranks));
}

}  // namespace

Communicator::Communicator(uint64_t hash, std::vector<pid_t> pids, int rank, shm::Segment segment, Options opts)
    : hash_(hash), pids_(pids), tuning_(Tuning::fromEnv(static_cast<int>(pids.size()))) {
  const int localRanks = static_cast<int>(pids.size());  // all ranks share this host
  ctx_ = std::make_unique<Context>(std::move(segment), rank, std::move(pids),
                                   WaitSettings::fromEnv(opts.timeoutMs, localRanks));
  engine_ = std::make_unique<Engine>(*ctx_);
}

Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::init(const bootstrap::UniqueIdData& id, int nranks, int rank,
                                                 Options opts) {
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(env::getDouble("CFX_BOOTSTRAP_TIMEOUT") * 1000));
  bootstrap::Client client = bootstrap::Client::join(id, nranks, rank, timeout);
  const auto& peers = client.peers();

  // Every rank sees the same table, so every rank reaches the same verdict here.
  std::map<std::string, std::vector<int>> hosts;
  for (int r = 0; r < nranks; ++r) hosts[peers[r].hostId].push_back(r);
  if (hosts.size() > 1) {
    std::string list;
    for (auto& [host, ranks] : hosts) list += " [" + host + ": " + std::to_string(ranks.size()) + " ranks]";
    throw Error(Status::kInvalidUsage, "the ranks span " + std::to_string(hosts.size()) +
                                           " hosts, but this build of Conflux supports ranks on one host only:" + list);
  }

  uint64_t hash = bootstrap::hash64(id.secret.data(), id.secret.size());
  const bool leader = rank == 0;
  shm::Segment segment;
  // Leader creates and sizes the segment; everyone learns whether that worked.
  Outcome created = leader ? capture([&] { segment = createSegment(hash, nranks); }) : Outcome{};
  client.barrier(created).raise();
  // The others attach; the leader unlinks the name once all have, so nothing outlives a crash.
  Outcome attached = leader ? Outcome{} : capture([&] { segment = shm::Segment::open(segmentName(hash)); });
  client.barrier(attached).raise();
  if (leader) segment.unlink();
  client.finish();

  std::vector<pid_t> pids(nranks);
  for (int r = 0; r < nranks; ++r) pids[r] = peers[r].pid;
  std::unique_ptr<Communicator> comm(new Communicator(hash, std::move(pids), rank, std::move(segment), opts));
  logCommInfo(hash, rank, nranks, comm->tuning());
  return comm;
}

void Communicator::runInternal(Coll coll, const void* send, void* recv, size_t count, cfxRedOp_t op) {
  Batch b;
  b.ops.push_back(makeCollective(CollArgs{coll, send, recv, count, cfxInt32, op, -1}, tuning_, size()));
  engine_->runBlocking(std::move(b)).raise();
}

std::unique_ptr<Communicator> Communicator::split(int color, int key, Options opts) {
  const int n = size();
  const int me = rank();
  // 1. Everyone learns every rank's (color, key).
  int32_t mine[2] = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(n));
  runInternal(Coll::kAllGather, mine, all.data(), 2, cfxSum);

  // 2. Members of my color, ordered by (key, parent rank).
  std::vector<int> members;
  if (color != CFX_SPLIT_NOCOLOR) {
    for (int r = 0; r < n; ++r) {
      if (all[2 * r] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  }
  uint64_t seed[3] = {hash_, ++splits_, static_cast<uint64_t>(static_cast<uint32_t>(color))};
  uint64_t newHash = bootstrap::hash64(seed, sizeof(seed));
  int newRank = static_cast<int>(std::find(members.begin(), members.end(), me) - members.begin());
  bool member = color != CFX_SPLIT_NOCOLOR;
  bool leader = member && newRank == 0;

  // 3. Leaders create, then the others attach; the parent's collectives act as status barriers
  //    (every parent rank takes part, including those that join no new communicator).
  shm::Segment segment;
  auto statusBarrier = [&](const Outcome& o, const char* step) {
    int32_t failed = o.ok() ? 0 : me + 1, anyFailed = 0;
    runInternal(Coll::kAllReduce, &failed, &anyFailed, 1, cfxMax);
    if (!o.ok()) throw Error(o.status, "cfxCommSplit: " + o.message);
    if (anyFailed != 0) {
      throw Error(Status::kRemoteError, std::string("cfxCommSplit: rank ") + std::to_string(anyFailed - 1) +
                                            " failed to " + step + " its shared memory (see that rank's error)");
    }
  };
  statusBarrier(leader ? capture([&] { segment = createSegment(newHash, static_cast<int>(members.size())); })
                       : Outcome{},
                "create");
  statusBarrier(member && !leader ? capture([&] { segment = shm::Segment::open(segmentName(newHash)); }) : Outcome{},
                "attach");
  if (leader) segment.unlink();
  if (!member) return nullptr;

  std::vector<pid_t> pids;
  for (int r : members) pids.push_back(pids_[r]);
  std::unique_ptr<Communicator> comm(new Communicator(newHash, std::move(pids), newRank, std::move(segment), opts));
  logCommInfo(newHash, newRank, static_cast<int>(members.size()), comm->tuning());
  return comm;
}

}  // namespace conflux
