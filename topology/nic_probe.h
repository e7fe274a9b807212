// Asking the live machine about a NIC: libibverbs for InfiniBand/RoCE devices (link layer and
// active speed x width of port 1), sysfs for Ethernet devices. Empty answers where the device,
// the port or the library is missing.
#pragma once

#include <optional>
#include <string>

namespace conflux::topology {

struct RdmaPort {
  bool ethernet = false;  // RoCE: the port's link layer is Ethernet
  std::optional<double> gbps;
};

bool haveIbverbs();
std::optional<RdmaPort> probeRdmaPort(const std::string& device);
std::optional<double> probeEthernetGbps(const std::string& ifname);

// Gbit/s of an InfiniBand port from ibv_port_attr's active_speed and active_width codes.
std::optional<double> ibRateGbps(int activeSpeed, int activeWidth);

}  // namespace conflux::topology
