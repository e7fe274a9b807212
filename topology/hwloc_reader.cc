// discover.h's hwloc half: the live machine or an XML file, turned into the model.
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/error.h"
#include "common/log.h"
#include "topology/discover.h"
#include "topology/nic_probe.h"

namespace conflux::topology {

namespace {

// Owns one loaded hwloc topology.
class HwlocTopology {
 public:
  HwlocTopology() { hwloc_topology_init(&t_); }
  ~HwlocTopology() { hwloc_topology_destroy(t_); }
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;
  hwloc_topology_t get() const { return t_; }

 private:
  hwloc_topology_t t_;
};

std::vector<int> bitmapIndices(hwloc_const_bitmap_t set) {
  std::vector<int> out;
  for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
  return out;
}

std::string busId(hwloc_obj_t o) {
  char buf[32];
  const auto& p = o->attr->pcidev;
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%01x", p.domain, p.bus, p.dev, p.func);
  return buf;
}

// The NUMA node a device hangs under, or -1 when its CPU-side parent spans several nodes.
int numaOf(hwloc_topology_t t, hwloc_obj_t o) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
  if (anc == nullptr || anc->nodeset == nullptr || hwloc_bitmap_weight(anc->nodeset) != 1) return -1;
  return hwloc_bitmap_first(anc->nodeset);
}

// The bus id of the topmost PCI-to-PCI bridge above a PCI device (its root port or switch): two
// devices with the same one talk without crossing the host bridge.
std::string pciRootOf(hwloc_obj_t pci) {
  std::string root;
  for (hwloc_obj_t p = pci->parent; p != nullptr && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) root = busId(p);
  }
  return root;
}

std::optional<double> infoGbps(hwloc_obj_t o, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(o, name);
  if (v == nullptr) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || d <= 0) return std::nullopt;
  return d;
}

std::string gbpsText(double g) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", g);
  return buf;
}

void readNuma(hwloc_topology_t t, Topology& out) {
  int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, i);
    NumaNode node;
    node.id = static_cast<int>(o->os_index);
    node.memoryBytes = o->attr->numanode.local_memory;
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, o);
    node.package = pkg != nullptr ? static_cast<int>(pkg->os_index) : 0;
    node.cpus = bitmapIndices(o->cpuset);
    for (int c = 0; c < ncores; ++c) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, c);
      if (!hwloc_bitmap_iszero(core->cpuset) && hwloc_bitmap_isincluded(core->cpuset, o->cpuset)) {
        node.cores.push_back(bitmapIndices(core->cpuset));
      }
    }
    if (node.cores.empty()) {
      for (int cpu : node.cpus) node.cores.push_back({cpu});
    }
    out.numa.push_back(node);
  }
  std::sort(out.numa.begin(), out.numa.end(), [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
}

void readGpus(hwloc_topology_t t, Topology& out) {
  for (hwloc_obj_t o = hwloc_get_next_pcidev(t, nullptr); o != nullptr; o = hwloc_get_next_pcidev(t, o)) {
    const auto& p = o->attr->pcidev;
    if (p.vendor_id != 0x10de || (p.class_id >> 8) != 0x03) continue;  // NVIDIA display/3D controllers
    Gpu g;
    const char* name = hwloc_obj_get_info_by_name(o, "PCIDevice");
    char fallback[48];
    std::snprintf(fallback, sizeof(fallback), "NVIDIA [10de:%04x]", p.device_id);
    g.name = name != nullptr ? name : fallback;
    g.pci = busId(o);
    g.numa = numaOf(t, o);
    g.pciRoot = pciRootOf(o);
    out.gpus.push_back(g);
  }
  std::sort(out.gpus.begin(), out.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.pci < b.pci; });
}

bool hasOpenFabricsSibling(hwloc_obj_t osdev) {
  if (osdev->parent == nullptr) return false;
  for (hwloc_obj_t c = osdev->parent->io_first_child; c != nullptr; c = c->next_sibling) {
    if (c->type == HWLOC_OBJ_OS_DEVICE && c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) return true;
  }
  return false;
}

// NICs: OpenFabrics devices (InfiniBand or RoCE, by libibverbs' link layer), and Ethernet
// devices that are not the IP interface of an OpenFabrics device. Live, the kind and speed are
// probed and written onto the hwloc object so that a dump carries them.
void readNics(hwloc_topology_t t, Topology& out, bool live) {
  for (hwloc_obj_t o = hwloc_get_next_osdev(t, nullptr); o != nullptr; o = hwloc_get_next_osdev(t, o)) {
    const auto type = o->attr->osdev.type;
    if (type != HWLOC_OBJ_OSDEV_OPENFABRICS && type != HWLOC_OBJ_OSDEV_NETWORK) continue;
    if (o->name == nullptr || o->parent == nullptr || o->parent->type != HWLOC_OBJ_PCI_DEVICE) continue;
    Nic n;
    n.name = o->name;
    n.pci = busId(o->parent);
    n.numa = numaOf(t, o);
    n.pciRoot = pciRootOf(o->parent);
    if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      if (live) {
        if (auto port = probeRdmaPort(n.name)) {
          hwloc_obj_add_info(o, "Port1LinkLayer", port->ethernet ? "Ethernet" : "InfiniBand");
          if (port->gbps) hwloc_obj_add_info(o, "Port1RateGbps", gbpsText(*port->gbps).c_str());
        }
      }
      const char* layer = hwloc_obj_get_info_by_name(o, "Port1LinkLayer");
      n.kind = layer != nullptr && std::string(layer) == "Ethernet" ? NicKind::kRoce : NicKind::kIb;
      n.gbps = infoGbps(o, "Port1RateGbps");
    } else {
      if (hasOpenFabricsSibling(o)) continue;  // IPoIB or the RoCE device's netdev: counted once
      if (live) {
        if (auto g = probeEthernetGbps(n.name)) hwloc_obj_add_info(o, "LinkSpeedGbps", gbpsText(*g).c_str());
      }
      n.kind = NicKind::kEth;
      n.gbps = infoGbps(o, "LinkSpeedGbps");
    }
    out.nics.push_back(n);
  }
  std::sort(out.nics.begin(), out.nics.end(),
            [](const Nic& a, const Nic& b) { return a.pci != b.pci ? a.pci < b.pci : a.name < b.name; });
}

}  // namespace

bool haveHwloc() { return true; }

Topology loadHwloc(const std::string& xmlPath, const std::string& dumpPath) {
  HwlocTopology h;
  hwloc_topology_t t = h.get();
  if (!xmlPath.empty() && hwloc_topology_set_xml(t, xmlPath.c_str()) != 0) {
    throw Error(Status::kInvalidArgument, "CFX_TOPO_FILE=" + xmlPath + ": hwloc cannot read it as XML");
  }
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(t) != 0) {
    if (!xmlPath.empty()) throw Error(Status::kInvalidArgument, "CFX_TOPO_FILE=" + xmlPath + ": hwloc cannot load it");
    throw Error(Status::kSystemError, "hwloc could not discover this machine");
  }
  Topology out;
  out.source = xmlPath.empty() ? "hwloc (this machine)" : "hwloc file " + xmlPath;
  readNuma(t, out);
  readGpus(t, out);
  readNics(t, out, xmlPath.empty());
  if (out.numa.empty()) {
    // hwloc always reports at least one node; a file without any is malformed for our purpose.
    throw Error(Status::kInvalidArgument, "topology " + out.source + " has no NUMA node");
  }
  if (!dumpPath.empty()) {
    if (hwloc_topology_export_xml(t, dumpPath.c_str(), 0) != 0) {
      logWarn("CFX_TOPO_DUMP_FILE=" + dumpPath + ": could not write the topology");
    } else {
      logInfo("TOPO wrote the topology to " + dumpPath + " (CFX_TOPO_DUMP_FILE)");
    }
  }
  return out;
}

}  // namespace conflux::topology
