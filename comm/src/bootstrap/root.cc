#include "bootstrap/root.h"

#include <poll.h>
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
  uint64_t barriers = 0;   // barriers this rank has entered
  uint64_t exchanges = 0;  // exchanges this rank has entered
  std::string blob;        // its blob for the current exchange
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

  void run() {
    net::setNonBlocking(listen_.fd(), true);
    while (!finished()) {
      if (Clock::now() > deadline_) {
        failJob("bootstrap timed out: " + std::to_string(joinedCount()) + " of " +
                (nranks_ > 0 ? std::to_string(nranks_) : std::string("?")) + " ranks joined" + missingText() +
                " (CFX_BOOTSTRAP_TIMEOUT)");
        return;
      }
      // A root on a shrink's socket serves it until a later attempt's root starts there.
      const bool accepting = !known_.earlier || known_.earlier->latest() == generation_;
      std::vector<pollfd> fds{{listen_.fd(), static_cast<short>(accepting ? POLLIN : 0), 0}};
      for (auto& c : conns_) fds.push_back({c->sock.fd(), POLLIN, 0});
      int rc = ::poll(fds.data(), fds.size(), 100);
      if (rc < 0 && errno != EINTR) return;
      if (fds[0].revents & POLLIN) acceptAll();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) readFrom(*conns_[i - 1]);
      }
      expireHandshakes();
      checkKnownRanks();
      conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](auto& c) { return c->closed; }), conns_.end());
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

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(listen_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      auto c = std::make_unique<Conn>();
      c->sock = net::Socket(fd);
      c->handshakeDeadline = Clock::now() + kHandshakeTimeout;
      conns_.push_back(std::move(c));
    }
  }

  // A peer with another job's secret: it is told why, and the job's timeout message counts it.
  void refuse(Conn& c) {
    std::string from = "a peer";
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (getpeername(c.sock.fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
      net::SockAddr a;
      a.storage = ss;
      a.len = len;
      from = a.str();
    }
    refused_.push_back(from);
    logWarn("bootstrap root: refused " + from + ": wrong secret");
    auto f = refusalFrame("wrong secret: its unique id (CFX_UNIQUE_ID, or CFX_SECRET) is not this job's");
    try {
      c.sock.sendAll(f.data(), f.size(), Clock::now() + std::chrono::seconds(1));
    } catch (const Error&) {
      // It will see the connection close instead.
    }
    c.sock.close();
    c.closed = true;
  }

  // A rank joining an earlier, failed attempt on this socket (KnownRanks::earlier): it hears why
  // that attempt failed. Returns false when `secret` is no earlier attempt's.
  bool tellEarlierError(Conn& c, const uint8_t* secret) {
    if (!known_.earlier) return false;
    auto earlier = known_.earlier->find(secret);
    if (!earlier) return false;
    std::string m = earlier->second.substr(0, kMaxMessageBytes);
    try {
      auto f = frame(MsgType::kError, earlier->first, std::vector<uint8_t>(m.begin(), m.end()));
      c.sock.sendAll(f.data(), f.size(), Clock::now() + std::chrono::seconds(1));
    } catch (const Error&) {
      // It will see the connection close instead.
    }
    c.sock.close();
    c.closed = true;
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
    c.sock.close();
    c.closed = true;
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
        failJob("rank " + std::to_string(r) + " " + why + kGoneBeforeJoining);
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
        bool expected = c.rank < 0 ? t == MsgType::kHello : (t == MsgType::kBarrier || t == MsgType::kBye || t == MsgType::kExchange);
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
        } else if (static_cast<MsgType>(h.type) == MsgType::kBye) {
          c.saidBye = true;
        } else if (static_cast<MsgType>(h.type) == MsgType::kExchange) {
          onExchange(c, std::string(payload.begin(), payload.end()));
        } else {
          onBarrier(c, decodeStatus(payload));
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
    std::string m = msg.substr(0, kMaxMessageBytes);
    send(c, MsgType::kError, std::vector<uint8_t>(m.begin(), m.end()));
    ++informed_;
    told_.insert(rank);
    c.sock.close();
    c.closed = true;
  }

  // A job-level error: every rank that is or will be connected hears it.
  void failJob(const std::string& msg) {
    if (jobError_.empty()) {
      jobError_ = msg;
      logWarn("bootstrap root: " + msg);
      if (known_.earlier) known_.earlier->add(secret_, msg);
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
    byRank_[h.rank] = &c;
    if (static_cast<int>(byRank_.size()) == nranks_) {
      formed_ = true;
      auto welcome = encodeWelcome(peers_);
      for (Conn* conn : ranksOwnLast()) send(*conn, MsgType::kWelcome, welcome);
      logInfo("bootstrap root: all " + std::to_string(nranks_) + " ranks joined");
    }
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

  void onBarrier(Conn& c, const StatusMsg& s) {
    ++c.barriers;
    if (s.status != 0 && barrierStatus_.status == 0) barrierStatus_ = s;
    releaseIfComplete();
  }

  void releaseIfComplete() {
    uint64_t level = UINT64_MAX;
    for (auto& [rank, conn] : byRank_) level = std::min(level, conn->barriers);
    if (level <= released_) return;
    released_ = level;
    auto payload = encodeStatus(barrierStatus_);
    for (Conn* conn : ranksOwnLast()) {
      if (!conn->closed) send(*conn, MsgType::kRelease, payload);
    }
    barrierStatus_ = StatusMsg{};
  }

  // Like a barrier, but the release carries every rank's blob.
  void onExchange(Conn& c, std::string blob) {
    ++c.exchanges;
    c.blob = std::move(blob);
    if (static_cast<int>(byRank_.size()) != nranks_) return;
    for (auto& [rank, conn] : byRank_) {
      if (conn->exchanges <= exchanged_) return;
    }
    ++exchanged_;
    std::vector<std::string> blobs(nranks_);
    for (auto& [rank, conn] : byRank_) blobs[rank] = conn->blob;
    auto payload = encodeExchanged(blobs);
    for (Conn* conn : ranksOwnLast()) {
      if (!conn->closed) send(*conn, MsgType::kExchanged, payload);
    }
  }

  void onDisconnect(Conn& c) {
    c.sock.close();
    c.closed = true;
    if (c.rank < 0 || byRank_.count(c.rank) == 0 || byRank_[c.rank] != &c) return;
    // A rank that leaves without saying goodbye died during initialisation.
    if (!c.saidBye) {
      std::string msg = "rank " + std::to_string(c.rank) + " (pid " + std::to_string(peers_[c.rank].pid) +
                        ") disconnected during initialisation";
      byRank_.erase(c.rank);
      failJob(msg);
      return;
    }
    byRank_.erase(c.rank);  // left normally, after the last barrier
  }

  net::Socket listen_;
  Secret secret_;
  Clock::time_point deadline_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::map<int, Conn*> byRank_;
  std::vector<PeerInfo> peers_;
  int nranks_ = 0;
  int firstRank_ = -1;
  bool formed_ = false;
  std::string jobError_;
  std::vector<std::string> refused_;  // addresses of peers refused for a wrong secret
  int informed_ = 0;
  uint64_t released_ = 0;
  uint64_t exchanged_ = 0;
  StatusMsg barrierStatus_;
  KnownRanks known_;
  uint64_t generation_ = 0;  // this root's attempt on a shrink's socket
  std::set<int> told_;       // ranks (of their hellos) sent the job's error
  bool allHeard_ = false;    // after a failure: every known rank has heard it or is gone
  Clock::time_point nextKnownCheck_{};
};

}  // namespace

uint64_t FailedAttempts::begin() { return latest_.fetch_add(1) + 1; }

void FailedAttempts::add(const Secret& secret, const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  attempts_.emplace_back(secret, error);
}

std::optional<std::pair<Secret, std::string>> FailedAttempts::find(const uint8_t* secret) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& a : attempts_) {
    if (secretsEqual(a.first, secret)) return a;
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
