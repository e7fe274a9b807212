#include "topology/cpus.h"

#include <sched.h>

#include <algorithm>
#include <functional>

namespace conflux::topology {

namespace {
std::vector<int> cpusIn(const cpu_set_t& set) {
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}
}  // namespace

std::vector<int> usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {0};
  return cpusIn(set);
}

std::vector<int> cpusOf(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) return {};
  return cpusIn(set);
}

bool eachHasOwnCpu(const std::vector<std::vector<int>>& cpus) {
  // The common cases at once: every process may use the same CPUs (none bound), or none shares.
  if (std::all_of(cpus.begin(), cpus.end(), [&](const auto& c) { return c == cpus.front(); })) {
    return cpus.empty() || cpus.front().size() >= cpus.size();
  }
  // Otherwise augmenting paths (Kuhn): a few ranks and CPUs, once per communicator.
  int maxCpu = -1;
  for (const auto& c : cpus) {
    if (c.empty()) return false;
    maxCpu = std::max(maxCpu, c.back());
  }
  std::vector<int> owner(static_cast<size_t>(maxCpu) + 1, -1);
  std::vector<char> seen;
  std::function<bool(int)> place = [&](int p) {
    for (int c : cpus[static_cast<size_t>(p)]) {
      if (seen[static_cast<size_t>(c)]) continue;
      seen[static_cast<size_t>(c)] = 1;
      int& o = owner[static_cast<size_t>(c)];
      if (o < 0 || place(o)) {
        o = p;
        return true;
      }
    }
    return false;
  };
  for (size_t p = 0; p < cpus.size(); ++p) {
    seen.assign(owner.size(), 0);
    if (!place(static_cast<int>(p))) return false;
  }
  return true;
}

}  // namespace conflux::topology
