#include "hosts.h"

#include <map>

namespace conflux {

HostMap HostMap::build(const std::vector<std::string>& hostIds) {
  HostMap m;
  std::map<std::string, int> index;
  for (size_t r = 0; r < hostIds.size(); ++r) {
    auto [it, fresh] = index.emplace(hostIds[r], static_cast<int>(m.ranksOn.size()));
    if (fresh) {
      m.ranksOn.emplace_back();
      m.names.push_back(hostIds[r]);
    }
    int h = it->second;
    m.hostOf.push_back(h);
    m.localRankOf.push_back(static_cast<int>(m.ranksOn[h].size()));
    m.ranksOn[h].push_back(static_cast<int>(r));
  }
  return m;
}

bool HostMap::uniform() const {
  for (const auto& r : ranksOn) {
    if (r.size() != ranksOn[0].size()) return false;
  }
  return true;
}

namespace {

// A host identity is "hostname/boot id/network namespace" (topology/host_id.h), or whatever
// CFX_HOST_ID says (then it is shown whole).
std::string part(const std::string& id, int i) {
  size_t begin = 0;
  for (int k = 0; k < i; ++k) {
    begin = id.find('/', begin);
    if (begin == std::string::npos) return "";
    ++begin;
  }
  return id.substr(begin, id.find('/', begin) - begin);
}

std::string shortened(std::string s) { return s.size() > 32 ? s.substr(0, 32) + "..." : s; }

}  // namespace

std::string HostMap::label(int h) const {
  const std::string& id = names[h];
  std::string host = part(id, 0);
  bool sameHostname = false, sameNetns = false;
  for (int o = 0; o < nhosts(); ++o) {
    if (o == h || part(names[o], 0) != host) continue;
    sameHostname = true;
    sameNetns |= part(names[o], 2) == part(id, 2);
  }
  if (!sameHostname) return shortened(host);
  // Two hosts with one hostname: network namespaces (tests/netns) or machines (boot ids) differ.
  if (!sameNetns && !part(id, 2).empty()) return shortened(host) + " " + part(id, 2);
  if (!part(id, 1).empty()) return shortened(host) + " boot " + part(id, 1).substr(0, 8);
  return shortened(id);
}

std::string HostMap::describe(int rank) const {
  if (rank < 0 || rank >= nranks()) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (host " + std::to_string(hostOf[rank]) + " '" + label(hostOf[rank]) + "')";
}

}  // namespace conflux
