// Network interface choice, with NCCL_SOCKET_IFNAME's syntax (CFX_SOCKET_IFNAME):
//   "eth,ib"     interfaces whose names start with eth or ib
//   "^docker"    every interface except those starting with docker
//   "=eth0"      exactly eth0 ("^=eth0": all but exactly eth0)
// Without a filter, loopback, docker and veth interfaces are skipped; loopback is used only when
// nothing else is up (a single host).
#pragma once

#include <string>
#include <vector>

#include "transport/socket/socket.h"

namespace conflux::net {

struct IfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  static IfaceFilter parse(const std::string& spec);
  bool matches(const std::string& ifname) const;
  bool empty() const { return names.empty(); }
};

struct Iface {
  std::string name;
  SockAddr addr;  // port 0
  bool loopback = false;
};

// Up interfaces with an IPv4 (then IPv6) address, in the kernel's order.
std::vector<Iface> listInterfaces();
// The interfaces `filter` selects from `all` (the default rules when the filter is empty).
std::vector<Iface> selectInterfaces(const std::vector<Iface>& all, const IfaceFilter& filter);
// The first interface CFX_SOCKET_IFNAME selects on this host; throws Error(kInvalidArgument)
// naming the available interfaces when none matches.
Iface chooseInterface();

}  // namespace conflux::net
