#include "bootstrap/client.h"

#include <unistd.h>

#include <cstring>
#include <thread>

#include "common/error.h"
#include "conflux/conflux.h"
#include "topology/host_id.h"

namespace conflux::bootstrap {

namespace {
constexpr auto kRetryRefused = std::chrono::milliseconds(20);
}  // namespace

Client Client::join(const UniqueIdData& id, int nranks, int rank, std::chrono::milliseconds timeout,
                    bool rootListens) {
  Client c;
  c.secret_ = id.secret;
  c.rank_ = rank;
  // The root enforces CFX_BOOTSTRAP_TIMEOUT and then tells every rank who never joined; a rank
  // waits a little longer than that, so it hears why rather than timing out on its own.
  constexpr auto kHearTheRoot = std::chrono::seconds(3);
  c.deadline_ = std::chrono::steady_clock::now() + timeout + kHearTheRoot;
  c.root_ = id.root.str();
  Hello h;
  h.libVersion = CFX_VERSION_CODE;
  h.nranks = nranks;
  h.rank = rank;
  h.pid = static_cast<int32_t>(getpid());
  h.hostId = topology::hostId();
  net::Socket listener;  // for this rank's children in the tree
  Welcome welcome;
  for (;;) {
    c.sock_ = net::connectWithRetry(id.root, c.deadline_, rootListens);
    c.local_ = net::localAddress(c.sock_);
    if (!listener.valid()) {
      net::SockAddr at = c.local_;
      at.setPort(0);
      listener = net::listenOn(at, 64);
      h.treePort = static_cast<uint32_t>(net::localAddress(listener).port());
    }
    auto f = frame(MsgType::kHello, c.secret_, encodeHello(h));
    c.sock_.sendAll(f.data(), f.size(), c.deadline_);
    try {
      welcome = decodeWelcome(c.readFrame(MsgType::kWelcome));
      break;
    } catch (const Error&) {
      // On a socket that outlives one root (a shrink's), an earlier attempt's root may still be
      // serving it, and refuses this attempt's secret: the next root takes over shortly.
      if (!rootListens || !c.refused_ || std::chrono::steady_clock::now() + kRetryRefused > c.deadline_) throw;
      c.refused_ = false;
      std::this_thread::sleep_for(kRetryRefused);
    }
  }
  if (welcome.nranks != nranks || welcome.parent.empty() != (rank == 0)) {
    throw Error(Status::kInternalError, "bootstrap welcome for " + std::to_string(welcome.nranks) + " ranks");
  }
  c.tree_ = Tree(c.secret_, nranks, rank, c.deadline_);
  c.tree_.connect(std::move(listener), welcome.parent, c.watch());
  // Every rank's pid and host, gathered over the tree.
  const std::string mine = [&] {
    auto p = encodePeer(PeerInfo{h.pid, h.hostId});
    return std::string(p.begin(), p.end());
  }();
  TreeDown table = c.tree_.round(Outcome{}, &mine, c.watch());
  std::vector<int32_t> pids;
  for (const auto& blob : table.blobs) {
    c.peers_.push_back(decodePeer(blob));
    pids.push_back(c.peers_.back().pid);
  }
  c.tree_.setPids(std::move(pids));
  return c;
}

RootWatch Client::watch() {
  return RootWatch{sock_.fd(), [this] { readFrame(MsgType::kError); }};
}

std::vector<uint8_t> Client::readFrame(MsgType expected) {
  FrameHeader h;
  try {
    sock_.recvAll(&h, sizeof(h), deadline_);
  } catch (const Error& e) {
    if (e.status() == Status::kTimeout) {
      throw Error(Status::kTimeout, "rank " + std::to_string(rank_) +
                                        ": timed out waiting for the other ranks to join (CFX_BOOTSTRAP_TIMEOUT)");
    }
    // The root runs in one rank's process (rank 0's under launchers); when that process fails
    // or exits during initialisation, the others lose it without a word.
    throw Error(e.status(), "bootstrap: lost the root at " + root_ + " (it runs in the process that created the unique id, "
                            "normally rank 0's, which may have failed or exited during initialisation): " + e.what());
  }
  std::string bad = validateHeader(h, secret_);
  if (!bad.empty() && isRefusal(h)) {
    refused_ = true;
    std::vector<uint8_t> why(h.length);
    if (h.length > 0) sock_.recvAll(why.data(), why.size(), deadline_);
    throw Error(Status::kInvalidUsage, "bootstrap: the root at " + root_ + " refused rank " + std::to_string(rank_) +
                                           ": " + decodeError(why).message);
  }
  if (!bad.empty()) throw Error(Status::kRemoteError, "bootstrap root sent an invalid frame: " + bad);
  std::vector<uint8_t> payload(h.length);
  if (h.length > 0) sock_.recvAll(payload.data(), payload.size(), deadline_);
  auto type = static_cast<MsgType>(h.type);
  if (type == MsgType::kError) {
    StatusMsg e = decodeError(payload);
    throw Error(static_cast<Status>(e.status), "bootstrap failed: " + e.message);
  }
  if (type != expected) throw Error(Status::kRemoteError, "bootstrap root sent an unexpected message");
  return payload;
}

Outcome Client::barrier(const Outcome& mine) {
  TreeDown d = tree_.round(mine, nullptr, watch());
  return Outcome{static_cast<Status>(d.status.status), d.status.message};
}

std::vector<std::string> Client::exchange(const std::string& mine) {
  if (mine.size() > kMaxExchangeBytes) {
    throw Error(Status::kInternalError, "bootstrap exchange blob of " + std::to_string(mine.size()) + " bytes");
  }
  TreeDown d = tree_.round(Outcome{}, &mine, watch());
  return std::move(d.blobs);
}

void Client::finish() {
  auto f = frame(MsgType::kBye, secret_, {});
  try {
    sock_.sendAll(f.data(), f.size(), deadline_);
  } catch (const Error&) {
    // The root may already be gone; initialisation is complete either way.
  }
  sock_.close();
  tree_.close();
}

}  // namespace conflux::bootstrap
