// What the TCP transport puts on the wire, and its connection set-up (tcp_connect.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "transport/net/transport.h"
#include "transport/socket/socket.h"

namespace conflux::net::tcp {

inline constexpr uint32_t kHandshakeMagic = 0x43465848;  // "CFXH"
inline constexpr uint32_t kFrameMagic = 0x43465846;      // "CFXF"
inline constexpr uint16_t kWireVersion = 3;
inline constexpr uint32_t kMaxChunkBytes = 4u << 20;     // a frame's payload bound

struct Handshake {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;
  uint64_t commHash;
  int32_t from;
  int32_t to;
  int32_t sockIndex;
  int32_t nsocks;
};
static_assert(sizeof(Handshake) == 32);

// A frame on a data connection carries a chunk of a message. An abort notice on the control
// connection is a frame too: `chunkBytes` of text (why the sender failed), `reserved` the failure's
// status and `callSeq` the collective call it failed in (0: unknown, or not a collective).
struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t reserved;    // 0 (a notice: its status)
  uint32_t chunkBytes;
  uint32_t callSeq;     // the message's call tag (CallTag): number ...
  uint64_t seq;         // the message's number in this direction of the pair
  uint64_t offset;      // of this chunk within the message
  uint64_t totalBytes;  // of the whole message
  uint64_t call;        // ... and packed call (0: not checked)
};
static_assert(sizeof(FrameHeader) == 48);

// Checks a handshake received by `me`; returns "" or why it is refused.
std::string checkHandshake(const Handshake& h, uint64_t commHash, int me, int nranks, int nsocks);
// Checks a frame header's self-consistency; returns "" or what is wrong.
std::string checkFrame(const FrameHeader& h);

// Connects this rank to setup.peers with `nsocks` connections each. Returns the connected
// (blocking) sockets by peer rank, ordered by socket index.
std::map<int, std::vector<Socket>> connectAll(const TransportSetup& setup, int nsocks);

// The pieces of connectAll, for connections on demand (CFX_RUNTIME_CONNECT):
// this rank's listener, and every rank's address from setup.exchange.
struct Listening {
  Socket listener;
  std::vector<std::string> addrs;
};
Listening listenAndExchange(const TransportSetup& setup);
// `nsocks` blocking connections to `peer` at `addr`, each opened with its handshake. With
// `refusedIsFinal` a refused connection throws at once (the peer's listener is gone).
std::vector<Socket> connectPeer(const TransportSetup& setup, const std::string& addr, int peer, int nsocks,
                                Clock::time_point deadline, bool refusedIsFinal);
// A higher rank that needs a pair's connections asks the lower rank, which connects them: one
// connection whose handshake has this socket index and is closed at once.
inline constexpr int32_t kWakeIndex = -1;
void sendWake(const TransportSetup& setup, const std::string& addr, int peer, Clock::time_point deadline);
bool isWake(const Handshake& h, const TransportSetup& setup);
// Reads and checks the handshake of an accepted connection (blocking, until `deadline`); returns
// "" and fills `h`, or why the connection is refused.
std::string readHandshake(const Socket& s, const TransportSetup& setup, int nsocks, Handshake& h,
                          Clock::time_point deadline);

}  // namespace conflux::net::tcp
