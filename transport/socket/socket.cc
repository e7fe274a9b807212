#include "transport/socket/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/error.h"

namespace conflux::net {

SockAddr SockAddr::parse(const std::string& hostPort) {
  std::string host, port;
  if (!hostPort.empty() && hostPort[0] == '[') {
    size_t close = hostPort.find(']');
    if (close == std::string::npos || close + 1 >= hostPort.size() || hostPort[close + 1] != ':') {
      throw Error(Status::kInvalidArgument, "bad address '" + hostPort + "': expected [v6]:port");
    }
    host = hostPort.substr(1, close - 1);
    port = hostPort.substr(close + 2);
  } else {
    size_t colon = hostPort.rfind(':');
    if (colon == std::string::npos) throw Error(Status::kInvalidArgument, "bad address '" + hostPort + "': expected host:port");
    host = hostPort.substr(0, colon);
    port = hostPort.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw Error(Status::kInvalidArgument, "cannot resolve '" + hostPort + "': " + gai_strerror(rc));
  }
  SockAddr a;
  std::memcpy(&a.storage, res->ai_addr, res->ai_addrlen);
  a.len = res->ai_addrlen;
  freeaddrinfo(res);
  return a;
}

std::string SockAddr::str() const {
  char host[INET6_ADDRSTRLEN] = {0};
  if (family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
  inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
}

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void SockAddr::setPort(int p) {
  if (family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(static_cast<uint16_t>(p));
  } else {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(static_cast<uint16_t>(p));
  }
}

Socket::~Socket() { close(); }

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.release();
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000000));
}

void waitFd(int fd, short events, Clock::time_point deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = remainingMs(deadline);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return;
    if (rc == 0) throw Error(Status::kTimeout, std::string("socket ") + what + " timed out");
    if (errno != EINTR) throwSystemError(std::string("poll for ") + what, errno);
  }
}

}  // namespace

void Socket::sendAll(const void* data, size_t n, Clock::time_point deadline) const {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t rc = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc > 0) {
      p += rc;
      n -= static_cast<size_t>(rc);
      continue;
    }
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      waitFd(fd_, POLLOUT, deadline, "send");
      continue;
    }
    throw Error(Status::kRemoteError, std::string("connection lost while sending: ") + std::strerror(errno));
  }
}

void Socket::recvAll(void* data, size_t n, Clock::time_point deadline) const {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t rc = ::recv(fd_, p, n, MSG_DONTWAIT);
    if (rc > 0) {
      p += rc;
      n -= static_cast<size_t>(rc);
      continue;
    }
    if (rc == 0) throw Error(Status::kRemoteError, "connection closed by the remote peer");
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      waitFd(fd_, POLLIN, deadline, "receive");
      continue;
    }
    throw Error(Status::kRemoteError, std::string("connection lost while receiving: ") + std::strerror(errno));
  }
}

Socket listenOn(const SockAddr& addr, int backlog) {
  Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) throwSystemError("socket", errno);
  int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    throwSystemError("bind " + addr.str(), errno);
  }
  if (::listen(s.fd(), backlog) != 0) throwSystemError("listen " + addr.str(), errno);
  return s;
}

SockAddr localAddress(const Socket& s) {
  SockAddr a;
  a.len = sizeof(a.storage);
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a.storage), &a.len) != 0) throwSystemError("getsockname", errno);
  return a;
}

void setNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
}

Socket connectWithRetry(const SockAddr& addr, Clock::time_point deadline, bool refusedIsFinal) {
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    Socket s(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) throwSystemError("socket", errno);
    if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) == 0) {
      int one = 1;
      setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return s;
    }
    int e = errno;
    if (refusedIsFinal && e == ECONNREFUSED) {
      throw Error(Status::kRemoteError, "connection to " + addr.str() + " refused: nothing listens there any more");
    }
    bool retry = e == ECONNREFUSED || e == ETIMEDOUT || e == ENETUNREACH || e == EHOSTUNREACH || e == EAGAIN ||
                 e == EINTR || e == ECONNRESET;
    if (!retry) throwSystemError("connect to " + addr.str(), e);
    if (Clock::now() + backoff >= deadline) {
      throw Error(Status::kTimeout, "could not connect to " + addr.str() + " before the timeout (last error: " +
                                        std::strerror(e) + ")");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
  }
}

SockAddr defaultHostAddress() {
  SockAddr best = SockAddr::parse("127.0.0.1:0");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return best;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    std::string name = i->ifa_name;
    if (name.rfind("docker", 0) == 0 || name.rfind("veth", 0) == 0) continue;
    std::memcpy(&best.storage, i->ifa_addr, sizeof(sockaddr_in));
    best.len = sizeof(sockaddr_in);
    break;
  }
  freeifaddrs(list);
  return best;
}

}  // namespace conflux::net
