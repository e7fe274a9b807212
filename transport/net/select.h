// Which network transport a communicator uses: CFX_NET=auto|tcp|ucx. auto takes UCX when this
// build has it and libibverbs reports an RDMA device (InfiniBand or RoCE), TCP otherwise.
#pragma once

#include <memory>
#include <string>

#include "transport/net/transport.h"

namespace conflux::net {

struct NetChoice {
  std::string name;    // "tcp" or "ucx"
  std::string reason;  // for CFX_DEBUG=INFO
};

// The number of RDMA devices libibverbs lists (0 in builds without it).
int rdmaDeviceCount();
NetChoice chooseNet();
std::unique_ptr<Transport> createTransport(const NetChoice& choice, const TransportSetup& setup);

}  // namespace conflux::net
