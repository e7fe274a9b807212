// Name lists with NCCL's syntax (NCCL_SOCKET_IFNAME, NCCL_IB_HCA), used by CFX_SOCKET_IFNAME and
// CFX_IB_HCA:
//   "eth,ib"        names starting with eth or ib
//   "^docker"       every name except those starting with docker
//   "=eth0"         exactly eth0 ("^=eth0": all but exactly eth0)
//   "mlx5_0:1"      a ":port" suffix is accepted and ignored (Conflux uses each device's port 1)
#pragma once

#include <string>
#include <vector>

namespace conflux {

struct NameFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  static NameFilter parse(const std::string& spec);
  bool matches(const std::string& name) const;
  bool empty() const { return names.empty(); }
};

}  // namespace conflux
