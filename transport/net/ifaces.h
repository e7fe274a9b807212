// Network interface choice, with NCCL_SOCKET_IFNAME's syntax (CFX_SOCKET_IFNAME):
//   "eth,ib"     interfaces whose names start with eth or ib
//   "^docker"    every interface except those starting with docker
//   "=eth0"      exactly eth0 ("^=eth0": all but exactly eth0)
// Without a filter, loopback, docker and veth interfaces are skipped; loopback is used only when
// nothing else is up (a single host).
#pragma once

#include <string>
#include <vector>

#include "common/name_filter.h"
#include "transport/socket/socket.h"

namespace conflux::net {

using IfaceFilter = NameFilter;

struct Iface {
  std::string name;
  SockAddr addr;  // port 0
  bool loopback = false;
};

// Up interfaces with an IPv4 (then IPv6) address, in the kernel's order.
std::vector<Iface> listInterfaces();
// The interfaces `filter` selects from `all` (the default rules when the filter is empty).
std::vector<Iface> selectInterfaces(const std::vector<Iface>& all, const IfaceFilter& filter);
// The interface CFX_SOCKET_IFNAME selects on this host: `preferred` (the plan's NIC) when it is
// among them, else the first; throws Error(kInvalidArgument) naming the available interfaces when
// none matches.
Iface chooseInterface(const std::string& preferred = "");

}  // namespace conflux::net
