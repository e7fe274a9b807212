// Builds without UCX: the UCX transport is absent.
#include "transport/net/ucx.h"

namespace conflux::net {

bool ucxAvailable() { return false; }

std::unique_ptr<Transport> createUcxTransport(const TransportSetup&) {
  throw Error(Status::kInvalidArgument, "this build of Conflux has no UCX");
}

}  // namespace conflux::net
