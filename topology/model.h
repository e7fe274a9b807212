// The machine as the rest of Conflux sees it: a small model built from hwloc (the live machine or
// an XML file), or a flat stand-in when hwloc is missing.
//
//   host -> packages -> NUMA nodes -> CPUs        (the domains)
//   GPUs and NICs, each attached to a NUMA node    (the devices)
//   NIC link speeds                                (the links)
//
// Pure data: every rank that reads the same source builds the same model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conflux::topology {

struct NumaNode {
  int id = 0;                // OS index (what mbind and numactl use)
  int package = 0;           // OS index of the package (socket) holding it
  uint64_t memoryBytes = 0;  // 0 when unknown
  std::vector<int> cpus;     // logical CPU numbers (as sched_setaffinity and taskset use them)
  std::vector<std::vector<int>> cores;  // the same CPUs, grouped by physical core
};

struct Gpu {
  std::string name;  // the PCI device name when known, else "NVIDIA [10de:xxxx]"
  std::string pci;   // bus id, "0000:07:00.0"
  int numa = -1;     // -1: not attached to one node
  std::string pciRoot;  // bus id of the PCI bridge under the host bridge that leads to it
};

enum class NicKind { kIb, kRoce, kEth };
const char* nicKindName(NicKind k);  // "ib", "roce", "eth"

struct Nic {
  std::string name;  // mlx5_0 for InfiniBand/RoCE (as CFX_IB_HCA names them), eth0 for Ethernet
  NicKind kind = NicKind::kEth;
  std::string pci;
  int numa = -1;
  std::optional<double> gbps;  // link speed when known
  std::string pciRoot;
};

struct Topology {
  std::string source;  // "hwloc (this machine)", "hwloc file X", "flat (...)"
  bool flat = false;   // no discovery: one node with this process's CPUs, no devices
  std::vector<NumaNode> numa;  // ascending id
  std::vector<Gpu> gpus;       // ascending PCI bus id
  std::vector<Nic> nics;       // ascending PCI bus id, then name

  int numaIndex(int id) const;  // position in `numa`, or -1
  const NumaNode* node(int id) const;
  int packageCount() const;
};

// One node holding `cpus`, no devices; `why` says what is missing (for the source and the INFO
// line).
Topology flatTopology(const std::vector<int>& cpus, const std::string& why);

// "0-3,8-11"
std::string cpuList(const std::vector<int>& cpus);

}  // namespace conflux::topology
