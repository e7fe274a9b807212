// The UCX transport (built when UCX is found): one UCP worker per communicator, one endpoint per
// peer with error-handling mode PEER, the tag API, and a progress thread that sleeps on the
// worker's event fd. UCX picks the wire (UCX_TLS): tcp and sm here, verbs on InfiniBand or RoCE,
// with no change to this code.
//
// Tags are (sequence number of the message in this direction of the pair << 24 | sender rank),
// so the k-th send from A to B meets the k-th receive B posted for A, as with TCP. A peer whose
// endpoint fails completes every request with it as kRemoteError naming the peer.
#pragma once

#include <memory>

#include "transport/net/transport.h"

namespace conflux::net {

// True in builds with UCX.
bool ucxAvailable();
std::unique_ptr<Transport> createUcxTransport(const TransportSetup& setup);

}  // namespace conflux::net
