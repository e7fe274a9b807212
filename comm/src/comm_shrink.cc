// Communicator::shrink and failedRanks: how survivors form a communicator without the ranks that
// died, using nothing of the failed one but what every rank learnt when it formed (its pids, hosts,
// plan and rendezvous addresses).
#include <algorithm>
#include <thread>

#include "common/log.h"
#include "communicator.h"
#include "transport/shm/liveness.h"

namespace conflux {

namespace {

// Why a parent rank that should join the shrink never will: its process exited (this host) or
// nothing listens at its rendezvous socket (another host); "" while it may still come.
struct Whereabouts {
  int parentRank;
  bool local;
  pid_t pid;
  net::SockAddr rendezvous;
  std::string whyGone() const {
    if (local) {
      return shm::processGone(pid) ? "(rank " + std::to_string(parentRank) + " of the communicator shrunk, pid " +
                                         std::to_string(pid) + ") exited"
                                   : "";
    }
    std::vector<std::string> why;
    if (unreachable({rendezvous}, std::chrono::milliseconds(500), &why).empty()) return "";
    return "(rank " + std::to_string(parentRank) + " of the communicator shrunk, on another host) no longer listens at " +
           rendezvous.str() + " (" + why[0] + ")";
  }
};

}  // namespace

std::vector<int> Communicator::failedRanks(std::chrono::milliseconds probeTimeout) const {
  // A rank that dies closes its sockets while it exits, so a peer may hear of the failure a moment
  // before the process is gone or its socket refuses: after a peer's failure, look again for a while.
  const auto settle = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    std::vector<int> failed, remote;
    std::vector<net::SockAddr> addresses;
    const int host = hosts_.hostOf[rank_];
    for (int r = 0; r < size(); ++r) {
      if (r == rank_) continue;
      if (hosts_.hostOf[r] == host) {
        if (shm::processGone(pids_[r])) failed.push_back(r);
      } else {
        remote.push_back(r);
        addresses.push_back(rendezvous_.peer(r));
      }
    }
    for (int i : unreachable(addresses, probeTimeout)) failed.push_back(remote[i]);
    std::sort(failed.begin(), failed.end());
    if (!failed.empty() || engine_->asyncError().status != Status::kRemoteError ||
        std::chrono::steady_clock::now() > settle) {
      return failed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& excluded, bool abortFirst, Options opts) {
  std::vector<int> survivors;
  for (int r = 0; r < size(); ++r) {
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) survivors.push_back(r);
  }
  const int n = static_cast<int>(survivors.size());
  const int newRank = static_cast<int>(std::find(survivors.begin(), survivors.end(), rank_) - survivors.begin());
  if (abortFirst) {
    abort();
  } else {
    engine_->drain();
  }
  // Every survivor derives the same secret (the same parent, the same number of shrinks so far);
  // the new root is the first survivor, on the socket it has listened at since this communicator
  // formed.
  const bootstrap::Secret secret = rendezvous_.derive(setup::kShrinkSecret, ++shrinks_, 0);
  const auto timeout = std::min<std::chrono::milliseconds>(setup::bootstrapTimeout(), ctx_->wait().timeout);
  const int root = survivors[0];
  if (root == rank_) {
    std::vector<Whereabouts> where;
    for (int r : survivors) {
      where.push_back({r, hosts_.hostOf[r] == hosts_.hostOf[rank_], pids_[r], rendezvous_.peer(r)});
    }
    rendezvous_.startRoot(secret, timeout, {n, [where](int r) { return where[r].whyGone(); }, nullptr});
  }
  logInfo("cfxCommShrink: rank " + std::to_string(rank_) + " becomes rank " + std::to_string(newRank) + " of " +
          std::to_string(n) + " (" + std::to_string(excluded.size()) + " excluded); root: rank " +
          std::to_string(root) + " at " + rendezvous_.peer(root).str());
  auto join = [&] {
    try {
      return bootstrap::Client::join(bootstrap::UniqueIdData{rendezvous_.peer(root), secret}, n, newRank, timeout, true);
    } catch (const Error& e) {
      if (e.status() != Status::kRemoteError) throw;
      throw Error(Status::kRemoteError, "the first survivor, rank " + std::to_string(root) +
                                            ", serves the shrink and cannot be reached (" + e.what() +
                                            "): if it failed, exclude it too (cfxCommGetFailedRanks)");
    }
  };
  // The survivors on this host keep their binding, and their segment the placement of the plan.
  auto prepare = [&](Setup& s, const HostMap& hosts, const bootstrap::Client& client) {
    for (int r = 0; r < n; ++r) {
      const auto& peer = client.peers()[r];
      if (peer.pid != pids_[survivors[r]] || peer.hostId != hosts_.names[hosts_.hostOf[survivors[r]]]) {
        throw Error(Status::kInvalidUsage, "rank " + std::to_string(r) + " of the shrunk communicator is pid " +
                                               std::to_string(peer.pid) + ", not rank " + std::to_string(survivors[r]) +
                                               " (pid " + std::to_string(pids_[survivors[r]]) +
                                               "): the survivors passed different excludeRanks");
      }
    }
    s.topo = topo_;
    s.plan = plan_;
    s.self = self_;
    std::vector<int> numa;
    for (int nr : hosts.ranksOn[hosts.hostOf[newRank]]) numa.push_back(localNuma_[hosts_.localRankOf[survivors[nr]]]);
    s.segment = setup::segmentPlanFor(plan_, std::move(numa));
  };
  try {
    bootstrap::Client client = join();
    return form(client, secret, newRank, opts, [&](Setup& s, const HostMap& hosts) { prepare(s, hosts, client); }, {});
  } catch (const Error& e) {
    if (e.status() != Status::kInvalidUsage) throw;
    throw Error(e.status(), std::string(e.what()) + " (every survivor must pass the same excludeRanks)");
  }
}

}  // namespace conflux
