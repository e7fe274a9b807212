#include "topology/placement.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifdef CFX_HAVE_NUMA
#include <numa.h>
#include <numaif.h>
#endif

#include "topology/cpus.h"
#include "topology/model.h"

namespace conflux::topology {

BindResult bindCallingThread(const std::vector<int>& cpus) {
  BindResult r;
  std::vector<int> allowed = usableCpus(), use;
  for (int c : cpus) {
    if (c < CPU_SETSIZE && std::binary_search(allowed.begin(), allowed.end(), c)) use.push_back(c);
  }
  if (use.empty()) {
    r.note = "none of CPUs " + cpuList(cpus) + " is available to this process (it may use " + cpuList(allowed) +
             "): not bound";
    return r;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : use) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    r.note = std::string("sched_setaffinity failed: ") + std::strerror(errno) + ": not bound";
    return r;
  }
  r.cpus = use;
  if (use.size() != cpus.size()) r.note = "CPUs " + cpuList(cpus) + " planned, only " + cpuList(use) + " available";
  return r;
}

#ifdef CFX_HAVE_NUMA
bool haveLibnuma() { return true; }

std::string preferNode(void* addr, size_t bytes, int node) {
  if (numa_available() < 0) return "libnuma reports no NUMA support";
  if (node < 0 || node > numa_max_node() || !numa_bitmask_isbitset(numa_all_nodes_ptr, node)) {
    return "NUMA node " + std::to_string(node) + " is not on this machine";
  }
  bitmask* mask = numa_allocate_nodemask();
  numa_bitmask_setbit(mask, node);
  long rc = mbind(addr, bytes, MPOL_PREFERRED, mask->maskp, mask->size + 1, 0);
  int e = errno;
  numa_free_nodemask(mask);
  if (rc != 0) return std::string("mbind failed: ") + std::strerror(e);
  return "";
}

int nodeOfPage(const void* addr) {
  int node = -1;
  void* p = const_cast<void*>(addr);
  if (get_mempolicy(&node, nullptr, 0, p, MPOL_F_NODE | MPOL_F_ADDR) != 0) return -1;
  return node;
}
#else
bool haveLibnuma() { return false; }
std::string preferNode(void*, size_t, int) { return "this build of Conflux has no libnuma"; }
int nodeOfPage(const void*) { return -1; }
#endif

}  // namespace conflux::topology
