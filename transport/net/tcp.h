// The TCP transport: CFX_NSOCKS non-blocking connections per peer pair, driven by one epoll
// progress thread per communicator.
//
// Set-up: every rank listens on the interface CFX_SOCKET_IFNAME chooses and publishes "ip:port";
// the lower rank of each pair connects (with bounded retries) and opens each connection with a
// handshake carrying a magic, the protocol version, the communicator's hash and both ranks; the
// higher rank accepts and refuses any connection whose handshake is wrong.
//
// Data: a message is cut into chunks striped over the pair's connections. Every chunk travels as
// a frame with a fixed header (magic, version, message sequence number, offset, chunk length,
// message length); the receiver checks every field against its posted receive before it reads the
// payload straight into the user's buffer. A frame for a receive not yet posted parks its
// connection (nothing is buffered; TCP's flow control holds the sender).
//
// Loss: a reset, or end-of-file on all of a peer's connections, fails every pending request with
// that peer with kRemoteError naming it; later requests to it fail at once.
#pragma once

#include <memory>

#include "transport/net/transport.h"

namespace conflux::net {

std::unique_ptr<Transport> createTcpTransport(const TransportSetup& setup);

}  // namespace conflux::net
