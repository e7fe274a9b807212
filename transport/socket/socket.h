// Thin RAII wrappers over TCP sockets for the bootstrap (and, later, the TCP transport).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace conflux::net {

using Clock = std::chrono::steady_clock;

struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  // "host:port", "[v6]:port" or "a.b.c.d:port"; resolves names with getaddrinfo.
  static SockAddr parse(const std::string& hostPort);
  std::string str() const;
  int port() const;
  void setPort(int port);
  int family() const { return storage.ss_family; }
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& o) noexcept : fd_(o.release()) {}
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void close();

  // Blocking send/receive of exactly n bytes before `deadline`; throw Error(kRemoteError) on EOF
  // or reset, Error(kTimeout) past the deadline.
  void sendAll(const void* data, size_t n, Clock::time_point deadline) const;
  void recvAll(void* data, size_t n, Clock::time_point deadline) const;

 private:
  int fd_ = -1;
};

// A listening socket bound to `addr` (port 0: any free port).
Socket listenOn(const SockAddr& addr, int backlog = 1024);
SockAddr localAddress(const Socket& s);
// Connects, retrying refused or unreachable attempts with back-off until `deadline`.
// `refusedIsFinal`: the peer listens already, so a refusal means it is gone (Error kRemoteError).
Socket connectWithRetry(const SockAddr& addr, Clock::time_point deadline, bool refusedIsFinal = false);
void setNonBlocking(int fd, bool on);

// The address this host is reached at by other hosts: the first IPv4 address of an interface that
// is up and not loopback, docker or veth; 127.0.0.1 if there is none.
SockAddr defaultHostAddress();

}  // namespace conflux::net
