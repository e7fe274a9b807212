#include "topology/nic_probe.h"

#include <fstream>

#ifdef CFX_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace conflux::topology {

std::optional<double> ibRateGbps(int activeSpeed, int activeWidth) {
  double lane;
  switch (activeSpeed) {
    case 1: lane = 2.5; break;   // SDR
    case 2: lane = 5; break;     // DDR
    case 4: lane = 10; break;    // QDR
    case 8: lane = 10; break;    // FDR10
    case 16: lane = 14; break;   // FDR
    case 32: lane = 25; break;   // EDR
    case 64: lane = 50; break;   // HDR
    case 128: lane = 100; break; // NDR
    case 256: lane = 200; break; // XDR
    default: return std::nullopt;
  }
  int lanes;
  switch (activeWidth) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: return std::nullopt;
  }
  return lane * lanes;
}

bool haveIbverbs() {
#ifdef CFX_HAVE_IBVERBS
  return true;
#else
  return false;
#endif
}

std::optional<RdmaPort> probeRdmaPort(const std::string& device) {
#ifdef CFX_HAVE_IBVERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return std::nullopt;
  std::optional<RdmaPort> out;
  for (int i = 0; i < n && !out; ++i) {
    if (device != ibv_get_device_name(list[i])) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (ctx == nullptr) break;
    ibv_port_attr attr{};
    if (ibv_query_port(ctx, 1, &attr) == 0) {
      RdmaPort p;
      p.ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
      p.gbps = ibRateGbps(attr.active_speed, attr.active_width);
      out = p;
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return out;
#else
  (void)device;
  return std::nullopt;
#endif
}

std::optional<double> probeEthernetGbps(const std::string& ifname) {
  std::ifstream f("/sys/class/net/" + ifname + "/speed");
  long mbps = -1;
  if (!(f >> mbps) || mbps <= 0) return std::nullopt;  // -1 or unreadable: down or virtual
  return static_cast<double>(mbps) / 1000.0;
}

}  // namespace conflux::topology
