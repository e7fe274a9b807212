#include <netinet/tcp.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "common/log.h"
#include "transport/net/ifaces.h"
#include "transport/net/tcp_wire.h"

namespace conflux::net::tcp {

std::string checkHandshake(const Handshake& h, uint64_t commHash, int me, int nranks, int nsocks) {
  if (h.magic != kHandshakeMagic) return "bad magic";
  if (h.version != kWireVersion) return "wire version " + std::to_string(h.version);
  if (h.commHash != commHash) return "handshake for another communicator";
  if (h.to != me) return "handshake addressed to rank " + std::to_string(h.to);
  if (h.from < 0 || h.from >= nranks || h.from >= me) return "handshake from unexpected rank " + std::to_string(h.from);
  if (h.nsocks != nsocks || h.sockIndex < 0 || h.sockIndex >= nsocks) {
    return "socket " + std::to_string(h.sockIndex) + " of " + std::to_string(h.nsocks) + " (expected " +
           std::to_string(nsocks) + " sockets per peer; is CFX_NSOCKS the same on every rank?)";
  }
  return {};
}

std::string checkFrame(const FrameHeader& h) {
  if (h.magic != kFrameMagic) return "bad frame magic";
  if (h.version != kWireVersion) return "frame wire version " + std::to_string(h.version);
  if (h.chunkBytes > kMaxChunkBytes) return "chunk of " + std::to_string(h.chunkBytes) + " bytes exceeds the bound";
  if (h.offset > h.totalBytes || h.chunkBytes > h.totalBytes - h.offset) return "chunk beyond the message's end";
  return {};
}

namespace {

void tune(const Socket& s) {
  int one = 1;
  setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Listening listenAndExchange(const TransportSetup& setup) {
  Iface iface = chooseInterface(setup.nicIsRdma ? std::string() : setup.nic);
  Socket listener = listenOn(iface.addr);
  SockAddr mine = localAddress(listener);
  logInfo("NET/TCP rank " + std::to_string(setup.rank) + " listens on " + iface.name + " " + mine.str());
  std::vector<std::string> addrs = setup.exchange(mine.str());
  return {std::move(listener), std::move(addrs)};
}

std::vector<Socket> connectPeer(const TransportSetup& setup, const std::string& addr, int peer, int nsocks,
                                Clock::time_point deadline, bool refusedIsFinal) {
  // The handshake is small enough to sit in the socket buffer, so no connect waits for the peer
  // to accept.
  SockAddr a = SockAddr::parse(addr);
  std::vector<Socket> out;
  for (int k = 0; k < nsocks; ++k) {
    Socket s = connectWithRetry(a, deadline, refusedIsFinal);
    tune(s);
    Handshake h{kHandshakeMagic, kWireVersion, 0, setup.commHash, setup.rank, peer, k, nsocks};
    s.sendAll(&h, sizeof(h), deadline);
    out.push_back(std::move(s));
  }
  return out;
}

void sendWake(const TransportSetup& setup, const std::string& addr, int peer, Clock::time_point deadline) {
  Socket s = connectWithRetry(SockAddr::parse(addr), deadline, true);
  Handshake h{kHandshakeMagic, kWireVersion, 0, setup.commHash, setup.rank, peer, kWakeIndex, 0};
  s.sendAll(&h, sizeof(h), deadline);
}

bool isWake(const Handshake& h, const TransportSetup& setup) {
  return h.magic == kHandshakeMagic && h.version == kWireVersion && h.commHash == setup.commHash &&
         h.to == setup.rank && h.from > setup.rank && h.from < setup.nranks && h.sockIndex == kWakeIndex;
}

std::string readHandshake(const Socket& s, const TransportSetup& setup, int nsocks, Handshake& h,
                          Clock::time_point deadline) {
  try {
    s.recvAll(&h, sizeof(h), deadline);
  } catch (const Error& e) {
    return e.what();
  }
  return checkHandshake(h, setup.commHash, setup.rank, setup.nranks, nsocks);
}

std::map<int, std::vector<Socket>> connectAll(const TransportSetup& setup, int nsocks) {
  const int me = setup.rank;
  Listening l = listenAndExchange(setup);
  const auto deadline = Clock::now() + setup.connectTimeout;

  std::map<int, std::vector<Socket>> socks;
  int expectAccepts = 0;
  for (int p : setup.peers) {
    socks[p].resize(nsocks);
    if (p < me) {
      expectAccepts += nsocks;
      continue;
    }
    socks[p] = connectPeer(setup, l.addrs.at(p), p, nsocks, deadline, false);
  }
  Socket& listener = l.listener;
  while (expectAccepts > 0) {
    // Bounded wait for the next connection.
    setNonBlocking(listener.fd(), true);
    int fd = -1;
    for (;;) {
      fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) break;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) throwSystemError("accept", errno);
      if (Clock::now() > deadline) {
        throw Error(Status::kTimeout, "NET/TCP rank " + std::to_string(me) + ": " + std::to_string(expectAccepts) +
                                          " connections from lower ranks never arrived");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    Socket s(fd);
    setNonBlocking(fd, false);
    Handshake h{};
    std::string bad = readHandshake(s, setup, nsocks, h, std::min(deadline, Clock::now() + std::chrono::seconds(10)));
    if (bad.empty() && (socks.count(h.from) == 0 || socks[h.from][h.sockIndex].valid())) bad = "duplicate connection";
    if (!bad.empty()) {
      logWarn("NET/TCP rank " + std::to_string(me) + ": refused a connection: " + bad);
      continue;
    }
    tune(s);
    socks[h.from][h.sockIndex] = std::move(s);
    --expectAccepts;
  }
  return socks;
}

}  // namespace conflux::net::tcp
