#include "bootstrap/root.h"

#include <sys/epoll.h>
#include <unistd.h>
#include <sys/socket.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/wire.h"
#include "common/error.h"
#include "common/log.h"
#include "patterns/kary_tree.h"
#include "topology/host_id.h"

namespace conflux::bootstrap {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kHandshakeTimeout = std::chrono::seconds(10);

struct Conn {
  net::Socket sock;
  std::vector<uint8_t> in;
  Clock::time_point handshakeDeadline;
  int rank = -1;           // set once its hello was accepted
  net::SockAddr tree;      // where it listens for its children in the bootstrap tree
  bool saidBye = false;    // finished initialisation normally
  bool ownProcess = false; // the rank runs in the process that runs this root
  bool closed = false;
};

class RootServer {
 public:
  RootServer(net::Socket listen, const Secret& secret, std::chrono::milliseconds timeout, KnownRanks known = {})
      : listen_(std::move(listen)), secret_(secret), deadline_(Clock::now() + timeout), known_(std::move(known)) {
    if (known_.earlier) generation_ = known_.earlier->begin();
  }

  // One epoll set over the listener and every connection: the root of n ranks spends O(1) per
  // message, not O(n) per wake-up as poll() over n descriptors did.
  void run() {
    net::setNonBlocking(listen_.fd(), true);
    epoll_ = net::Socket(epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) throwSystemError("bootstrap root: epoll_create1", errno);
    watch(listen_.fd(), nullptr);
    bool accepting = true;
    std::vector<epoll_event> events(256);
    while (!finished()) {
      if (Clock::now() > deadline_) {
        failJob("bootstrap timed out: " + std::to_string(joinedCount()) + " of " +
                (nranks_ > 0 ? std::to_string(nranks_) : std::string("?")) + " ranks joined" + missingText() +
                " (CFX_BOOTSTRAP_TIMEOUT)", Status::kTimeout);
        return;
      }
      // A root on a shrink's socket serves it until a later attempt's root starts there.
      if (accepting && known_.earlier && known_.earlier->latest() != generation_) {
        accepting = false;
        epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, listen_.fd(), nullptr);
      }
      int rc = epoll_wait(epoll_.fd(), events.data(), static_cast<int>(events.size()), 100);
      if (rc < 0 && errno != EINTR) return;
      for (int i = 0; i < rc; ++i) {
        auto* c = static_cast<Conn*>(events[i].data.ptr);
        if (c == nullptr) {
          if (accepting && listen_.valid()) acceptAll();
        } else if (!c->closed) {
          readFrom(*c);
        }
      }
      if (Clock::now() >= nextSweep_) {
        nextSweep_ = Clock::now() + std::chrono::milliseconds(100);
        expireHandshakes();
      }
      checkKnownRanks();
      if (closed_ > 0) {
        conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](auto& c) { return c->closed; }), conns_.end());
        closed_ = 0;
      }
    }
  }

 private:
  bool finished() const {
    // A failed shrink's root accepts no more (the next attempt's root serves the socket's queue),
    // and ends once those it accepted heard why.
    // A failed shrink's root ends once every survivor that is still there has heard why (or a later
    // attempt's root took the socket over, and tells late ones: FailedAttempts).
    if (!jobError_.empty() && known_.whyGone) {
      return conns_.empty() && (allHeard_ || known_.earlier->latest() != generation_);
    }
    if (!jobError_.empty()) return informed_ >= std::max(nranks_, 1);
    return formed_ && conns_.empty();
  }
  int joinedCount() const {
    int n = 0;
    for (auto& c : conns_) n += c->rank >= 0;
    return n;
  }

  void watch(int fd, Conn* c) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(epoll_.fd(), EPOLL_CTL_ADD, fd, &ev) != 0) throwSystemError("bootstrap root: epoll_ctl", errno);
  }

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(listen_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      auto c = std::make_unique<Conn>();
      c->sock = net::Socket(fd);
      c->handshakeDeadline = Clock::now() + kHandshakeTimeout;
      watch(fd, c.get());
      conns_.push_back(std::move(c));
    }
  }

  // Closes a connection (its descriptor leaves the epoll set with it); run() frees it.
  void closeConn(Conn& c) {
    if (c.closed) return;
    c.sock.close();
    c.closed = true;
    ++closed_;
  }

  // A peer with another job's secret: it is told why, and the job's timeout message counts it.
  void refuse(Conn& c) {
    std::string from = "a peer";
    if (net::SockAddr a = peerAddress(c); a.len > 0) from = a.str();
    refused_.push_back(from);
    logWarn("bootstrap root: refused " + from + ": wrong secret");
    auto f = refusalFrame("wrong secret: its unique id (CFX_UNIQUE_ID, or CFX_SECRET) is not this job's");
    try {
      c.sock.sendAll(f.data(), f.size(), Clock::now() + std::chrono::seconds(1));
    } catch (const Error&) {
      // It will see the connection close instead.
    }
    closeConn(c);
  }

  // A rank joining an earlier, failed attempt on this socket (KnownRanks::earlier): it hears why
  // that attempt failed. Returns false when `secret` is no earlier attempt's.
  bool tellEarlierError(Conn& c, const uint8_t* secret) {
    if (!known_.earlier) return false;
    auto earlier = known_.earlier->find(secret);
    if (!earlier) return false;
    try {
      auto f = frame(MsgType::kError, earlier->secret, encodeError(static_cast<int32_t>(earlier->status), earlier->error));
      c.sock.sendAll(f.data(), f.size(), Clock::now() + std::chrono::seconds(1));
    } catch (const Error&) {
      // It will see the connection close instead.
    }
    closeConn(c);
    return true;
  }

  // For the timeout message: who never joined, and who was refused.
  std::string missingText() const {
    std::string s;
    if (nranks_ > 0) {
      std::string missing;
      int count = 0;
      for (int r = 0; r < nranks_; ++r) {
        if (byRank_.count(r) != 0) continue;
        if (++count <= 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      if (count > 16) missing += ", ...";
      if (count > 0) s += "; never joined: rank" + std::string(count > 1 ? "s " : " ") + missing;
    }
    if (!refused_.empty()) {
      s += "; refused " + std::to_string(refused_.size()) + " connection" + (refused_.size() > 1 ? "s" : "") +
           " with a wrong secret (first from " + refused_.front() + ")";
    }
    return s;
  }

  void drop(Conn& c, const std::string& why) {
    logWarn("bootstrap root: dropping a connection: " + why);
    closeConn(c);
  }

  // KnownRanks: a rank that has not joined and never will fails the job now.
  // After a failure: whether each one has heard it or is gone.
  void checkKnownRanks() {
    if (!known_.whyGone || formed_ || Clock::now() < nextKnownCheck_) return;
    nextKnownCheck_ = Clock::now() + std::chrono::milliseconds(250);
    bool allHeard = true;
    for (int r = 0; r < known_.nranks; ++r) {
      if (!jobError_.empty()) {
        allHeard = allHeard && (told_.count(r) != 0 || !known_.whyGone(r).empty());
        continue;
      }
      if (byRank_.count(r) != 0) continue;
      std::string why = known_.whyGone(r);
      if (!why.empty()) {
        failJob("rank " + std::to_string(r) + " " + why + kGoneBeforeJoining, Status::kRemoteError);
        return;
      }
    }
    allHeard_ = !jobError_.empty() && allHeard;
  }

  void expireHandshakes() {
    auto now = Clock::now();
    for (auto& c : conns_) {
      if (!c->closed && c->rank < 0 && now > c->handshakeDeadline) drop(*c, "no valid hello within 10 s");
    }
  }

  void readFrom(Conn& c) {
    uint8_t buf[65536];
    for (;;) {
      ssize_t n = ::recv(c.sock.fd(), buf, sizeof(buf), 0);
      if (n > 0) {
        c.in.insert(c.in.end(), buf, buf + n);
        if (!parseFrames(c)) return;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
      onDisconnect(c);
      return;
    }
  }

  // Consumes complete frames from c.in. Returns false if the connection was closed.
  bool parseFrames(Conn& c) {
    while (c.in.size() >= sizeof(FrameHeader)) {
      FrameHeader h;
      std::memcpy(&h, c.in.data(), sizeof(h));
      std::string bad = validateHeader(h, secret_);
      if (bad.empty()) {
        auto t = static_cast<MsgType>(h.type);
        bool expected = c.rank < 0 ? t == MsgType::kHello : t == MsgType::kBye;
        if (!expected) bad = "unexpected message type " + std::to_string(h.type);
      }
      if (!bad.empty()) {
        if (c.rank < 0 && h.magic == kFrameMagic && h.version == kProtocolVersion && !secretsEqual(secret_, h.secret)) {
          if (!tellEarlierError(c, h.secret)) refuse(c);
        } else {
          drop(c, bad);
        }
        return false;
      }
      if (c.in.size() < sizeof(h) + h.length) return true;
      std::vector<uint8_t> payload(c.in.begin() + sizeof(h), c.in.begin() + sizeof(h) + h.length);
      c.in.erase(c.in.begin(), c.in.begin() + sizeof(h) + h.length);
      try {
        if (c.rank < 0) {
          onHello(c, decodeHello(payload));
        } else {
          c.saidBye = true;
        }
      } catch (const Error& e) {
        drop(c, e.what());
        return false;
      }
      if (c.closed) return false;
    }
    return true;
  }

  void send(Conn& c, MsgType t, const std::vector<uint8_t>& payload) {
    try {
      c.sock.sendAll(frame(t, secret_, payload).data(), sizeof(FrameHeader) + payload.size(),
                     Clock::now() + std::chrono::seconds(10));
    } catch (const Error& e) {
      drop(c, e.what());
    }
  }

  void sendError(Conn& c, const std::string& msg, int rank) {
    send(c, MsgType::kError, encodeError(static_cast<int32_t>(jobStatus_), msg));
    ++informed_;
    told_.insert(rank);
    closeConn(c);
  }

  // A job-level error: every rank that is or will be connected hears it, with `status` (a
  // usage error by default; a rank that is gone is a remote error, the timeout a timeout).
  void failJob(const std::string& msg, Status status = Status::kInvalidUsage) {
    if (jobError_.empty()) {
      jobError_ = msg;
      jobStatus_ = status;
      logWarn("bootstrap root: " + msg);
      if (known_.earlier) known_.earlier->add(secret_, status, msg);
    }
    std::vector<Conn*> joined;
    for (auto& c : conns_) {
      if (!c->closed && c->rank >= 0) joined.push_back(c.get());
    }
    for (Conn* c : ownProcessLast(joined)) sendError(*c, jobError_, c->rank);
    byRank_.clear();
  }

  void onHello(Conn& c, const Hello& h) {
    if (!jobError_.empty()) {
      sendError(c, jobError_, h.rank);
      return;
    }
    if (formed_) {
      drop(c, "hello from rank " + std::to_string(h.rank) + " after the job formed");
      return;
    }
    if (h.nranks <= 0 || h.nranks > kMaxRanks) {
      c.rank = h.rank;
      failJob("rank " + std::to_string(h.rank) + " gave nranks=" + std::to_string(h.nranks));
      return;
    }
    if (nranks_ == 0) {
      nranks_ = h.nranks;
      firstRank_ = h.rank;
    }
    c.rank = h.rank;
    if (h.nranks != nranks_) {
      failJob("nranks mismatch: rank " + std::to_string(firstRank_) + " gave nranks=" + std::to_string(nranks_) +
              " but rank " + std::to_string(h.rank) + " gave nranks=" + std::to_string(h.nranks));
      return;
    }
    if (h.rank < 0 || h.rank >= nranks_) {
      failJob("rank " + std::to_string(h.rank) + " is out of range for nranks=" + std::to_string(nranks_));
      return;
    }
    if (byRank_.count(h.rank) != 0) {
      failJob("duplicate rank: rank " + std::to_string(h.rank) + " joined twice (pids " +
              std::to_string(peers_[h.rank].pid) + " and " + std::to_string(h.pid) + ")");
      return;
    }
    if (peers_.empty()) peers_.resize(nranks_);
    peers_[h.rank] = PeerInfo{h.pid, h.hostId};
    c.ownProcess = h.pid == getpid() && h.hostId == topology::hostId();
    c.tree = peerAddress(c);
    c.tree.setPort(static_cast<int>(h.treePort));
    byRank_[h.rank] = &c;
    if (static_cast<int>(byRank_.size()) == nranks_) place();
  }

  // All ranks joined: each learns its parent in the bootstrap tree, and the rest of the bootstrap
  // (the rank table, barriers, all-gathers) runs over the tree.
  void place() {
    formed_ = true;
    // A job's own root stops listening before any rank hears it formed: a rank that finishes
    // initialisation may start the next job's root on the same address at once, and finds it free.
    // (A shrink's root keeps its socket: later attempts on it take the listener over.)
    if (!known_.earlier) {
      epoll_ctl(epoll_.fd(), EPOLL_CTL_DEL, listen_.fd(), nullptr);
      listen_.close();
    }
    for (Conn* conn : ranksOwnLast()) {
      const int parent = patterns::karyParent(conn->rank, patterns::kBootstrapFanout);
      send(*conn, MsgType::kWelcome, encodeWelcome(Welcome{nranks_, parent < 0 ? "" : byRank_[parent]->tree.str()}));
    }
    logInfo("bootstrap root: all " + std::to_string(nranks_) + " ranks joined; the rest runs over a " +
            std::to_string(patterns::kBootstrapFanout) + "-ary tree of depth " +
            std::to_string(patterns::karyDepth(nranks_, patterns::kBootstrapFanout)));
  }

  static net::SockAddr peerAddress(const Conn& c) {
    net::SockAddr a;
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getpeername(c.sock.fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      a.storage = ss;
      a.len = len;
    }
    return a;
  }

  // Answers go to the ranks of other processes first: a rank of this process that hears a failure
  // may exit at once, and this thread with it, before the others heard why.
  static std::vector<Conn*> ownProcessLast(std::vector<Conn*> conns) {
    std::stable_partition(conns.begin(), conns.end(), [](const Conn* c) { return !c->ownProcess; });
    return conns;
  }
  std::vector<Conn*> ranksOwnLast() const {
    std::vector<Conn*> conns;
    for (auto& [rank, conn] : byRank_) conns.push_back(conn);
    return ownProcessLast(std::move(conns));
  }

  void onDisconnect(Conn& c) {
    closeConn(c);
    if (c.rank < 0 || byRank_.count(c.rank) == 0 || byRank_[c.rank] != &c) return;
    // A rank that leaves without saying goodbye died during initialisation.
    if (!c.saidBye) {
      std::string msg = "rank " + std::to_string(c.rank) + " (pid " + std::to_string(peers_[c.rank].pid) +
                        ") disconnected during initialisation";
      byRank_.erase(c.rank);
      failJob(msg, Status::kRemoteError);
      return;
    }
    byRank_.erase(c.rank);  // left normally, after the last barrier
  }

  net::Socket listen_;
  Secret secret_;
  Clock::time_point deadline_;
  net::Socket epoll_;  // an epoll descriptor (net::Socket only closes it)
  std::vector<std::unique_ptr<Conn>> conns_;
  int closed_ = 0;  // connections closed since run() last freed them
  Clock::time_point nextSweep_{};
  std::map<int, Conn*> byRank_;
  std::vector<PeerInfo> peers_;
  int nranks_ = 0;
  int firstRank_ = -1;
  bool formed_ = false;
  std::string jobError_;
  Status jobStatus_ = Status::kInvalidUsage;
  std::vector<std::string> refused_;  // addresses of peers refused for a wrong secret
  int informed_ = 0;
  KnownRanks known_;
  uint64_t generation_ = 0;  // this root's attempt on a shrink's socket
  std::set<int> told_;       // ranks (of their hellos) sent the job's error
  bool allHeard_ = false;    // after a failure: every known rank has heard it or is gone
  Clock::time_point nextKnownCheck_{};
};

}  // namespace

uint64_t FailedAttempts::begin() { return latest_.fetch_add(1) + 1; }

void FailedAttempts::add(const Secret& secret, Status status, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.push_back(Failure{secret, status, error});
}

std::optional<FailedAttempts::Failure> FailedAttempts::find(const uint8_t* secret) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& a : attempts_) {
    if (secretsEqual(a.secret, secret)) return a;
  }
  return std::nullopt;
}

namespace {

void serve(std::shared_ptr<RootServer> server) {
  std::thread([server] {
    try {
      server->run();
    } catch (const std::exception& e) {
      logWarn(std::string("bootstrap root stopped: ") + e.what());
    }
  }).detach();
}

}  // namespace

net::SockAddr startRoot(const net::SockAddr& bindAddr, const Secret& secret, std::chrono::milliseconds timeout) {
  net::Socket listen = net::listenOn(bindAddr);
  net::SockAddr bound = net::localAddress(listen);
  serve(std::make_shared<RootServer>(std::move(listen), secret, timeout));
  return bound;
}

void startRoot(net::Socket listen, const Secret& secret, std::chrono::milliseconds timeout, KnownRanks known) {
  serve(std::make_shared<RootServer>(std::move(listen), secret, timeout, std::move(known)));
}

}  // namespace conflux::bootstrap
