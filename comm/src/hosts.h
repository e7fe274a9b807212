// Which ranks share a host. A host is its identity string (topology/host_id.h: hostname, boot id
// and network namespace, or CFX_HOST_ID); hosts are numbered in order of their lowest rank, and
// a rank's local rank is its position among its host's ranks. Pure data, built from the
// bootstrap's table, identical on every rank.
#pragma once

#include <string>
#include <vector>

namespace conflux {

struct HostMap {
  std::vector<int> hostOf;                // rank -> host
  std::vector<int> localRankOf;           // rank -> index among its host's ranks
  std::vector<std::vector<int>> ranksOn;  // host -> its ranks, ascending
  std::vector<std::string> names;         // host -> identity

  static HostMap build(const std::vector<std::string>& hostIds);
  int nhosts() const { return static_cast<int>(ranksOn.size()); }
  int nranks() const { return static_cast<int>(hostOf.size()); }
  // Every host has the same number of ranks.
  bool uniform() const;
  // The rank with local rank `l` on host `h`.
  int rankAt(int h, int l) const { return ranksOn[h][l]; }
  // "rank 3 (host 1 'node7')" for messages.
  std::string describe(int rank) const;
  // Host h's name for messages: its hostname, plus its network namespace (or boot id) where another
  // host of the communicator has the same hostname ("node7 net:[4026532301]").
  std::string label(int h) const;
};

}  // namespace conflux
