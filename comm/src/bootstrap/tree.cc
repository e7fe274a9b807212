#include "bootstrap/tree.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "common/log.h"
#include "patterns/kary_tree.h"

namespace conflux::bootstrap {

namespace {
// How long a rank that lost a link waits for the root's word on it (the root sees a dead
// process's connection close as soon as its neighbours do).
constexpr auto kHearTheRoot = std::chrono::seconds(2);
// How long a rank that heard the root's error still waits for what its link was sending (a
// round's outcome forwarded by a parent whose process has gone, taking the root with it).
constexpr auto kHearTheLink = std::chrono::seconds(1);
// How long an accepted connection has to say which child it is.
constexpr auto kChildHandshake = std::chrono::seconds(10);
}  // namespace

std::string Tree::who(int rank) const {
  std::string s = "rank " + std::to_string(rank);
  if (rank >= 0 && rank < static_cast<int>(pids_.size())) s += " (pid " + std::to_string(pids_[rank]) + ")";
  return s;
}

bool Tree::waitReadable(int fd, Clock::time_point until, const RootWatch& root) {
  if (rootError_) until = std::min(until, graceUntil_);
  for (;;) {
    auto now = Clock::now();
    if (now >= until) {
      if (rootError_) std::rethrow_exception(rootError_);
      return false;
    }
    const int ms = static_cast<int>(
        std::clamp<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count(), 1, 100));
    pollfd fds[2] = {{fd, POLLIN, 0}, {root.fd, POLLIN, 0}};
    const nfds_t n = root.fd >= 0 && fd != root.fd && !rootError_ ? 2 : 1;
    int rc = ::poll(fds, n, ms);
    if (rc < 0 && errno != EINTR) throwSystemError("poll in the bootstrap tree", errno);
    if (rc <= 0) continue;
    // What a link delivered comes first: a rank that failed a barrier sends the round's outcome
    // down before it exits, and its exit (or its process's root) must not overtake that.
    if (fds[0].revents != 0) return true;
    if (n == 2 && fds[1].revents != 0) {
      try {
        root.spoke();
        throw Error(Status::kRemoteError, "bootstrap: the root sent an unexpected message");
      } catch (const Error&) {
        rootError_ = std::current_exception();
      }
      graceUntil_ = Clock::now() + kHearTheLink;
      until = std::min(until, graceUntil_);
    }
  }
}

void Tree::lost(const Link& link, const std::string& why, const RootWatch& root) {
  // The root's message names the rank that died and reaches every rank alike; it is preferred.
  if (rootError_) std::rethrow_exception(rootError_);
  if (root.fd >= 0) {
    const auto until = std::min(deadline_, Clock::now() + kHearTheRoot);
    while (Clock::now() < until) {
      pollfd p{root.fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        root.spoke();
        throw Error(Status::kRemoteError, "bootstrap: the root sent an unexpected message");
      }
    }
  }
  const bool parent = link.rank == parent_.rank;
  throw Error(Status::kRemoteError, who(link.rank) + " disconnected during initialisation (rank " +
                                        std::to_string(rank_) + " lost its bootstrap tree " +
                                        (parent ? "parent" : "child") + ": " + why + ")");
}

std::vector<uint8_t> Tree::read(Link& link, MsgType expected, const RootWatch& root) {
  if (!waitReadable(link.sock.fd(), deadline_, root)) {
    throw Error(Status::kTimeout, "rank " + std::to_string(rank_) + ": timed out waiting for " + who(link.rank) +
                                      " in the bootstrap tree (CFX_BOOTSTRAP_TIMEOUT)");
  }
  FrameHeader h;
  try {
    link.sock.recvAll(&h, sizeof(h), deadline_);
  } catch (const Error& e) {
    lost(link, e.what(), root);
  }
  std::string bad = validateHeader(h, secret_);
  if (bad.empty() && static_cast<MsgType>(h.type) != expected) bad = "unexpected message type " + std::to_string(h.type);
  if (bad.empty() && h.length > maxRoundPayload(nranks_)) bad = "a payload of " + std::to_string(h.length) + " bytes";
  if (!bad.empty()) throw Error(Status::kRemoteError, who(link.rank) + " sent an invalid bootstrap frame: " + bad);
  std::vector<uint8_t> payload(h.length);
  try {
    if (h.length > 0) link.sock.recvAll(payload.data(), payload.size(), deadline_);
  } catch (const Error& e) {
    lost(link, e.what(), root);
  }
  return payload;
}

void Tree::send(Link& link, MsgType type, const std::vector<uint8_t>& payload, const RootWatch& root) {
  auto f = frame(type, secret_, payload);
  try {
    link.sock.sendAll(f.data(), f.size(), deadline_);
  } catch (const Error& e) {
    if (e.status() == Status::kTimeout) throw;
    lost(link, e.what(), root);
  }
}

Tree::Link Tree::acceptChild(const net::Socket& listener, std::vector<int>& expected) {
  Link link;
  int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return link;
  net::Socket s(fd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::string bad;
  int32_t rank = -1;
  try {
    FrameHeader h;
    s.recvAll(&h, sizeof(h), std::min(deadline_, Clock::now() + kChildHandshake));
    bad = validateHeader(h, secret_);
    if (bad.empty() && (static_cast<MsgType>(h.type) != MsgType::kChild || h.length != sizeof(rank))) {
      bad = "not a child's hello";
    }
    if (bad.empty()) s.recvAll(&rank, sizeof(rank), std::min(deadline_, Clock::now() + kChildHandshake));
  } catch (const Error& e) {
    bad = e.what();
  }
  auto it = std::find(expected.begin(), expected.end(), rank);
  if (bad.empty() && it == expected.end()) bad = "rank " + std::to_string(rank) + " is not a child of this rank";
  if (!bad.empty()) {
    logWarn("bootstrap: rank " + std::to_string(rank_) + " dropped a connection to its tree listener: " + bad);
    return link;
  }
  expected.erase(it);
  link.rank = rank;
  link.sock = std::move(s);
  return link;
}

void Tree::connect(net::Socket listener, const std::string& parent, const RootWatch& root) {
  const int k = patterns::kBootstrapFanout;
  if (rank_ > 0) {
    parent_.rank = patterns::karyParent(rank_, k);
    try {
      // The parent listened before it joined and the root placed no rank before all joined, so a
      // refusal means the parent's process is gone.
      parent_.sock = net::connectWithRetry(net::SockAddr::parse(parent), deadline_, true);
    } catch (const Error& e) {
      if (e.status() == Status::kTimeout) throw;
      lost(parent_, e.what(), root);
    }
    int32_t me = rank_;
    std::vector<uint8_t> payload(sizeof(me));
    std::memcpy(payload.data(), &me, sizeof(me));
    send(parent_, MsgType::kChild, payload, root);
  }
  std::vector<int> expected = patterns::karyChildren(nranks_, rank_, k);
  while (!expected.empty()) {
    if (!waitReadable(listener.fd(), deadline_, root)) {
      std::string missing;
      for (int r : expected) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      throw Error(Status::kTimeout, "rank " + std::to_string(rank_) + ": timed out waiting for its bootstrap tree "
                                    "children to connect (rank(s) " + missing + "; CFX_BOOTSTRAP_TIMEOUT)");
    }
    Link child = acceptChild(listener, expected);
    if (child.sock.valid()) children_.push_back(std::move(child));
  }
  std::sort(children_.begin(), children_.end(), [](const Link& a, const Link& b) { return a.rank < b.rank; });
}

TreeDown Tree::round(const Outcome& mine, const std::string* blob, const RootWatch& root) {
  TreeUp up;
  if (!mine.ok()) {
    up.status = StatusMsg{static_cast<int32_t>(mine.status), mine.message};
    up.failedRank = rank_;
  }
  if (blob != nullptr) up.blobs.emplace_back(rank_, *blob);
  for (Link& child : children_) {
    TreeUp c = decodeUp(read(child, MsgType::kUp, root), nranks_);
    if (c.status.status != 0 && (up.status.status == 0 || c.failedRank < up.failedRank)) {
      up.status = std::move(c.status);
      up.failedRank = c.failedRank;
    }
    for (auto& b : c.blobs) up.blobs.push_back(std::move(b));
  }
  std::vector<uint8_t> down;
  if (parent_.sock.valid()) {
    send(parent_, MsgType::kUp, encodeUp(up), root);
    down = read(parent_, MsgType::kDown, root);
  } else {
    TreeDown d;
    d.status = std::move(up.status);
    if (blob != nullptr) {
      d.blobs.resize(nranks_);
      std::vector<bool> seen(nranks_, false);
      for (auto& [r, b] : up.blobs) {
        if (seen[r]) throw Error(Status::kInternalError, "bootstrap all-gather: rank " + std::to_string(r) + " twice");
        seen[r] = true;
        d.blobs[r] = std::move(b);
      }
      if (std::count(seen.begin(), seen.end(), true) != nranks_) {
        throw Error(Status::kInternalError, "bootstrap all-gather: a rank ran a barrier instead");
      }
    }
    down = encodeDown(d);
  }
  for (Link& child : children_) send(child, MsgType::kDown, down, root);
  TreeDown d = decodeDown(down, nranks_);
  if (blob != nullptr && static_cast<int>(d.blobs.size()) != nranks_) {
    throw Error(Status::kInternalError, "bootstrap all-gather: rank 0 ran a barrier instead");
  }
  return d;
}

void Tree::close() {
  parent_.sock.close();
  for (Link& c : children_) c.sock.close();
  children_.clear();
}

}  // namespace conflux::bootstrap
