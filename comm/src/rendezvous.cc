#include "rendezvous.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace conflux {

namespace {
constexpr int kBacklog = 4096;
}  // namespace

Rendezvous::Rendezvous(const net::SockAddr& reachableAt, const bootstrap::Secret& secret) : secret_(secret) {
  host_ = reachableAt;
  host_.setPort(0);
  listener_ = net::listenOn(host_, kBacklog);
}

void Rendezvous::setPeers(const std::vector<std::string>& addresses) {
  peers_.clear();
  for (const auto& a : addresses) {
    try {
      peers_.push_back(net::SockAddr::parse(a));
    } catch (const Error& e) {
      throw Error(Status::kRemoteError, "rank " + std::to_string(peers_.size()) + " sent a bad rendezvous address: " +
                                            e.what());
    }
  }
}

bootstrap::Secret Rendezvous::derive(uint64_t kind, uint64_t number, uint64_t detail) const {
  uint64_t words[5];
  std::memcpy(words, secret_.data(), 16);
  words[2] = kind;
  words[3] = number;
  words[4] = detail;
  bootstrap::Secret out{};
  const uint64_t lo = bootstrap::hash64(words, sizeof(words), 0x5eed0001u);
  const uint64_t hi = bootstrap::hash64(words, sizeof(words), 0x5eed0002u);
  std::memcpy(out.data(), &lo, 8);
  std::memcpy(out.data() + 8, &hi, 8);
  return out;
}

void Rendezvous::startRoot(const bootstrap::Secret& secret, std::chrono::milliseconds timeout,
                           bootstrap::KnownRanks known) const {
  const int fd = ::fcntl(listener_.fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0) throw Error(Status::kSystemError, std::string("dup of the rendezvous socket: ") + std::strerror(errno));
  known.earlier = failed_;
  bootstrap::startRoot(net::Socket(fd), secret, timeout, std::move(known));
}

std::vector<int> unreachable(const std::vector<net::SockAddr>& addresses, std::chrono::milliseconds timeout,
                             std::vector<std::string>* why) {
  std::vector<std::pair<int, std::string>> gone;
  std::vector<net::Socket> socks(addresses.size());
  std::vector<pollfd> fds;
  std::vector<int> which;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const auto& a = addresses[i];
    socks[i] = net::Socket(::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!socks[i].valid()) throw Error(Status::kSystemError, std::string("socket: ") + std::strerror(errno));
    if (::connect(socks[i].fd(), reinterpret_cast<const sockaddr*>(&a.storage), a.len) == 0) continue;
    if (errno != EINPROGRESS) {
      gone.emplace_back(static_cast<int>(i), std::strerror(errno));
      continue;
    }
    fds.push_back({socks[i].fd(), POLLOUT, 0});
    which.push_back(static_cast<int>(i));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<bool> settled(fds.size(), false);
  size_t open = fds.size();
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::vector<pollfd> waiting;
    std::vector<size_t> index;
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!settled[k]) {
        waiting.push_back(fds[k]);
        index.push_back(k);
      }
    }
    int rc = ::poll(waiting.data(), waiting.size(), static_cast<int>(left.count()));
    if (rc < 0 && errno != EINTR) break;
    for (size_t j = 0; j < waiting.size(); ++j) {
      if (waiting[j].revents == 0) continue;
      settled[index[j]] = true;
      --open;
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(waiting[j].fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) gone.emplace_back(which[index[j]], std::strerror(err));
    }
  }
  for (size_t k = 0; k < fds.size(); ++k) {
    if (!settled[k]) gone.emplace_back(which[k], "no answer within " + std::to_string(timeout.count()) + " ms");
  }
  std::sort(gone.begin(), gone.end());
  std::vector<int> out;
  for (auto& [i, w] : gone) {
    out.push_back(i);
    if (why) why->push_back(w);
  }
  return out;
}

}  // namespace conflux
