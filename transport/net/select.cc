#include "transport/net/select.h"

#include "common/env.h"
#include "transport/net/tcp.h"
#include "transport/net/ucx.h"

#ifdef CFX_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

namespace conflux::net {

int rdmaDeviceCount() {
#ifdef CFX_HAVE_IBVERBS
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  return n;
#else
  return 0;
#endif
}

NetChoice chooseNet() {
  std::string want = env::getString("CFX_NET");
  if (want == "tcp") return {"tcp", "CFX_NET=tcp"};
  if (want == "ucx") {
    if (!ucxAvailable()) throw Error(Status::kInvalidArgument, "CFX_NET=ucx, but this build of Conflux has no UCX");
    return {"ucx", "CFX_NET=ucx"};
  }
  if (want != "auto") throw Error(Status::kInvalidArgument, "CFX_NET='" + want + "': expected auto, tcp or ucx");
  int devices = rdmaDeviceCount();
  if (devices > 0 && ucxAvailable()) return {"ucx", std::to_string(devices) + " RDMA device(s) found by libibverbs"};
  if (devices > 0) return {"tcp", "RDMA devices found, but this build has no UCX"};
  return {"tcp", "no RDMA device found by libibverbs"};
}

std::unique_ptr<Transport> createTransport(const NetChoice& choice, const TransportSetup& setup) {
  if (choice.name == "ucx") return createUcxTransport(setup);
  return createTcpTransport(setup);
}

}  // namespace conflux::net
