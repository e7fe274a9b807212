// Applying a plan to this process: binding the calling thread to CPUs (threads it starts later
// inherit the binding), and asking the kernel to place memory on a NUMA node. A plan may come
// from a topology file that is not this machine: only CPUs and nodes that exist here are used,
// and the result says what was left out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace conflux::topology {

struct BindResult {
  std::vector<int> cpus;  // what the thread is now bound to; empty: unchanged
  std::string note;       // why not, or what was dropped; empty when all went as planned
};
BindResult bindCallingThread(const std::vector<int>& cpus);

bool haveLibnuma();
// Prefers `node` for the pages of [addr, addr + bytes) allocated from now on (shared memory:
// before the pages are reserved). Returns an empty string, or why nothing was done.
std::string preferNode(void* addr, size_t bytes, int node);
// The node holding the page at `addr` (touched), or -1 when unknown.
int nodeOfPage(const void* addr);

}  // namespace conflux::topology
