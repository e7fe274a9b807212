#include "transport/net/tcp.h"
#include "transport/socket/fd_limit.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <thread>

#include "common/arith.h"
#include "common/env.h"
#include "common/log.h"
#include "transport/net/notice.h"
#include "transport/net/post_queue.h"
#include "transport/net/tcp_wire.h"

namespace conflux::net {

namespace {

using tcp::FrameHeader;

constexpr size_t kMinChunk = 128 << 10;
constexpr uint32_t kNoticeBytes = 512;  // an abort notice: why this rank failed
constexpr size_t kMaxChunk = 1 << 20;

// A send shared by its frames: complete when the last frame is written.
struct SendMsg {
  RequestPtr req;
  size_t framesLeft = 0;
};

struct Frame {
  FrameHeader hdr;
  const std::byte* data;
  std::shared_ptr<SendMsg> msg;
  size_t sent = 0;  // of sizeof(hdr) + hdr.chunkBytes
};

struct RecvMsg {
  RequestPtr req;
  std::byte* buf;
  size_t bytes;
  CallTag tag;
  size_t received = 0;
};

struct Conn {
  int peer = -1;
  bool control = false;  // the pair's control connection: carries only abort notices
  Socket sock;
  std::deque<Frame> out;
  // Receive state: the header being read, then the payload.
  FrameHeader hdr{};
  size_t hdrRead = 0;
  RecvMsg* target = nullptr;
  size_t payloadRead = 0;
  bool parked = false;
  bool eof = false;
};

struct Peer {
  std::vector<Conn*> conns;
  Conn* control = nullptr;
  std::vector<char> notice;  // an abort notice being read from the control connection
  std::map<uint64_t, RecvMsg> recvs;  // posted, by sequence number
  bool lost = false;
  std::string lostWhy;
  Status lostStatus = Status::kRemoteError;
  // The peer failed in call `closingCall` (its notice said so): what it sent for earlier calls is
  // still read, until its connections end; its sends, and receives of that call or later, fail.
  bool closing = false;
  uint32_t closingCall = 0;
  // Connections on demand (CFX_RUNTIME_CONNECT=1): until all its connections are up, requests
  // wait here in order; the higher rank collects the lower rank's connections as they arrive.
  bool ready = true;
  std::vector<Post> waiting;
  std::vector<Socket> incoming;
  int accepted = 0;
};

// The channel rides in the sequence number's top bits.
uint64_t encodeSeq(int channel, uint64_t n) { return n | (static_cast<uint64_t>(channel) << 56); }

class TcpTransport final : public Transport {
 public:
  TcpTransport(const TransportSetup& s, int nsocks) : setup_(s), nsocks_(nsocks), queue_(s.nranks, &encodeSeq) {
    // One more connection per pair than data needs: the control connection, on which a failing
    // rank tells its peers why before it closes the others.
    const std::string raised = reserveDescriptors(s.peers.size() * static_cast<size_t>(nsocks + 1) + 1,
                                                  "NET/TCP rank " + std::to_string(s.rank) + " (" +
                                                      std::to_string(nsocks + 1) + " connections to each of " +
                                                      std::to_string(s.peers.size()) + " ranks)");
    if (!raised.empty()) logInfo(raised);
    std::map<int, std::vector<Socket>> socks;
    if (runtimeConnect_) {
      tcp::Listening l = tcp::listenAndExchange(s);
      listener_ = std::move(l.listener);
      addrs_ = std::move(l.addrs);
      setNonBlocking(listener_.fd(), true);
      for (int p : s.peers) peers_[p].ready = false;
    } else {
      socks = tcp::connectAll(s, nsocks + 1);
    }
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throwSystemError("epoll", errno);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, queue_.fd(), &ev);
    for (auto& [p, list] : socks) attach(p, std::move(list));
    if (listener_.valid()) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.ptr = &listenerMark_;
      epoll_ctl(epfd_, EPOLL_CTL_ADD, listener_.fd(), &e);
    }
    thread_ = std::thread([this] { run(); });
  }

  ~TcpTransport() override {
    queue_.stop();
    thread_.join();
    ::close(epfd_);
  }

  const char* name() const override { return "tcp"; }

  RequestPtr postSend(int peer, int channel, const void* buf, size_t bytes, CallTag tag) override {
    return queue_.post(true, peer, channel, static_cast<std::byte*>(const_cast<void*>(buf)), bytes, tag);
  }
  RequestPtr postRecv(int peer, int channel, void* buf, size_t bytes, CallTag tag) override {
    return queue_.post(false, peer, channel, static_cast<std::byte*>(buf), bytes, tag);
  }

  std::string crossedCall(const CallTag& mine, uint32_t oldestOpen) const override {
    // Calls from `open` on may still be running in this rank's group: a message of one of them
    // that waits for its receive proves nothing.
    const uint32_t open = oldestOpen != 0 ? std::min(oldestOpen, mine.seq) : mine.seq;
    std::lock_guard<std::mutex> lock(parkedMu_);
    for (const auto& [conn, arrival] : parked_) {
      if (arrival.tag.call == 0 || mine.call == 0) continue;
      if (arrival.tag.seq == mine.seq && arrival.tag.differsFrom(mine)) return callMismatch(arrival.peer, arrival.tag, mine);
      // A message of a call this rank already finished without receiving it: the sender's call of
      // that number was another one (a second Broadcast root, say), and it may wait on it forever.
      if (arrival.tag.seq < open) {
        return "collective mismatch: " + setup_.describeRank(arrival.peer) + " sent a message of its " +
               setup_.describeCall(arrival.tag) + ", which " + setup_.describeRank(setup_.rank) + "'s call #" +
               std::to_string(arrival.tag.seq) + " did not expect (it finished that call and is in its " +
               setup_.describeCall(mine) + ")";
      }
    }
    return {};
  }

  // Synchronous: when it returns, the progress thread holds no pointer into user buffers.
  void shutdown(const std::string& why, Status status, uint32_t failedCall) override {
    queue_.shutdown(why, status, failedCall);
  }

 private:
  // ---- progress thread ------------------------------------------------------------------------

  void run() {
    epoll_event events[64];
    for (;;) {
      int n = epoll_wait(epfd_, events, 64, 100);
      changed_ = false;
      if (!drainPosts()) break;
      for (int i = 0; i < n; ++i) {
        if (events[i].data.ptr == nullptr) continue;
        if (events[i].data.ptr == &listenerMark_) {
          acceptWaiting();
          continue;
        }
        Conn* c = static_cast<Conn*>(events[i].data.ptr);
        if (peers_[c->peer].lost) continue;
        if (c->control) {
          readNotice(*c, false);
          continue;
        }
        readConn(*c);
        if (!peers_[c->peer].lost) writeConn(*c);
      }
      if (changed_ && setup_.wake) setup_.wake();
    }
    failAll("the transport was closed");
    queue_.stopped();
  }

  // Takes new requests from posters. Returns false when the transport stops.
  bool drainPosts() {
    std::deque<Post> posts;
    ShutdownRequest shutdown;
    if (!queue_.take(posts, shutdown)) return false;
    const std::string& why = shutdown.why;
    if (!why.empty() && !shutDown_) {
      shutDown_ = true;
      for (auto& [p, peer] : peers_) {
        if (!peer.lost) sendNotice(peer, noticeText(why, rootCause_), shutdown.status, shutdown.failedCall);
      }
      failAll(why);
      queue_.shutdownDone();
    }
    for (auto& p : posts) {
      Peer& peer = peers_[p.peer];
      if (shutDown_ || peer.lost || (peer.closing && !stillComing(peer, p.send, p.tag))) {
        p.req->fail(shutDown_ ? Status::kRemoteError : peer.lostStatus, shutDown_ ? why : peer.lostWhy);
        changed_ = true;
        continue;
      }
      if (!peer.ready) {
        // The lower rank of the pair connects, the first time either side needs the other (a
        // higher rank asks it to).
        if (peer.waiting.empty()) {
          if (p.peer > setup_.rank) {
            connectOnDemand(p.peer);
          } else {
            wake(p.peer);
          }
        }
        if (peer.lost) {
          p.req->fail(peer.lostStatus, peer.lostWhy);
          changed_ = true;
          continue;
        }
        if (!peer.ready) {
          peer.waiting.push_back(std::move(p));
          continue;
        }
      }
      handlePost(peer, p);
    }
    return true;
  }

  void handlePost(Peer& peer, const Post& p) {
    if (p.send) {
      queueSend(peer, p);
      return;
    }
    peer.recvs.emplace(p.seq, RecvMsg{p.req, p.buf, p.bytes, p.tag});
    for (Conn* c : peer.conns) {
      if (c->parked) {
        setParked(*c, false);
        readConn(*c);
      }
    }
  }

  // Adopts the connections to `p` (the last is the control connection) and runs what waited.
  void attach(int p, std::vector<Socket> socks) {
    Peer& peer = peers_[p];
    for (size_t k = 0; k < socks.size(); ++k) {
      auto c = std::make_unique<Conn>();
      c->peer = p;
      c->control = k + 1 == socks.size();
      c->sock = std::move(socks[k]);
      setNonBlocking(c->sock.fd(), true);
      epoll_event e{};
      e.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
      e.data.ptr = c.get();
      epoll_ctl(epfd_, EPOLL_CTL_ADD, c->sock.fd(), &e);
      if (c->control) {
        peer.control = c.get();
      } else {
        peer.conns.push_back(c.get());
      }
      conns_.push_back(std::move(c));
    }
    if (peer.ready) return;
    peer.ready = true;
    ++connected_;
    logInfo("NET/TCP rank " + std::to_string(setup_.rank) + ": connected to " + setup_.describeRank(p) + " on demand (" +
            std::to_string(socks.size()) + " sockets; " + std::to_string(connected_) + " of " +
            std::to_string(setup_.peers.size()) + " peers connected)");
    std::vector<Post> waiting;
    waiting.swap(peer.waiting);
    for (const Post& w : waiting) handlePost(peer, w);
  }

  // This rank is the lower of the pair: blocking connects (a live peer's listener completes them
  // without its progress thread), bounded; a refused connection means the peer's process is gone.
  void connectOnDemand(int p) {
    try {
      const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(setup_.connectTimeout, std::chrono::seconds(10));
      attach(p, tcp::connectPeer(setup_, addrs_.at(p), p, nsocks_ + 1, deadline, true));
    } catch (const Error& e) {
      loseUnexplained(p, "could not connect to " + setup_.describeRank(p) + " at " + addrs_.at(p) + " (" + e.what() +
                             "): its process is gone, or it destroyed its communicator");
    }
  }

  // This rank is the higher of the pair and needs it first: it asks the lower rank to connect (so
  // a message of a mismatched call still reaches it and is found out, as with connections at init).
  void wake(int p) {
    try {
      tcp::sendWake(setup_, addrs_.at(p), p, Clock::now() + std::chrono::seconds(10));
    } catch (const Error& e) {
      // The lower rank may have connected already, sent what it had for this rank, and destroyed its
      // communicator (closing its listener) before this rank needed it: its connections wait in this
      // rank's listener, with the data. Take them before calling the rank lost (MultiHostShrink's
      // Send/Recv ring on 2+2+2 failed 4 to 8 runs in 30 this way).
      acceptWaiting();
      if (peers_[p].ready) return;
      loseUnexplained(p, "could not reach " + setup_.describeRank(p) + " at " + addrs_.at(p) + " (" + e.what() +
                             "): its process is gone, or it destroyed its communicator");
    }
  }

  // The higher rank of a pair: takes the lower rank's connections whenever they come.
  void acceptWaiting() {
    for (;;) {
      const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN: nothing more now
      Socket s(fd);
      setNonBlocking(fd, false);
      tcp::Handshake h{};
      // The connecting rank sends its handshake right after connect returns: it is here or nearly.
      std::string bad = tcp::readHandshake(s, setup_, nsocks_ + 1, h, Clock::now() + std::chrono::seconds(2));
      if (!bad.empty() && tcp::isWake(h, setup_)) {
        Peer& asking = peers_[h.from];
        if (!asking.ready && !asking.lost) connectOnDemand(h.from);
        continue;
      }
      Peer* peer = bad.empty() ? &peers_[h.from] : nullptr;
      if (peer != nullptr && (peer->ready || peer->lost)) bad = "a connection from a rank already connected";
      if (peer != nullptr && bad.empty()) {
        peer->incoming.resize(static_cast<size_t>(nsocks_ + 1));
        if (peer->incoming[h.sockIndex].valid()) bad = "duplicate connection";
      }
      if (!bad.empty()) {
        logWarn("NET/TCP rank " + std::to_string(setup_.rank) + ": refused a connection: " + bad);
        continue;
      }
      peer->incoming[h.sockIndex] = std::move(s);
      if (++peer->accepted == nsocks_ + 1) attach(h.from, std::move(peer->incoming));
    }
  }

  void queueSend(Peer& peer, const Post& p) {
    size_t chunk = std::clamp(ceilDiv(p.bytes, static_cast<size_t>(nsocks_)), kMinChunk, kMaxChunk);
    size_t frames = p.bytes == 0 ? 1 : ceilDiv(p.bytes, chunk);
    auto msg = std::make_shared<SendMsg>(SendMsg{p.req, frames});
    for (size_t i = 0; i < frames; ++i) {
      Frame f{};
      size_t off = i * chunk;
      f.hdr = FrameHeader{tcp::kFrameMagic, tcp::kWireVersion, 0,
                          static_cast<uint32_t>(std::min(chunk, p.bytes - std::min(off, p.bytes))), p.tag.seq, p.seq, off,
                          p.bytes, p.tag.call};
      f.data = p.buf + off;
      f.msg = msg;
      Conn* c = peer.conns[(p.seq + i) % peer.conns.size()];
      c->out.push_back(f);
    }
    for (Conn* c : peer.conns) writeConn(*c);
  }

  void writeConn(Conn& c) {
    while (!c.out.empty()) {
      Frame& f = c.out.front();
      const size_t total = sizeof(FrameHeader) + f.hdr.chunkBytes;
      iovec iov[2];
      int n = 0;
      if (f.sent < sizeof(FrameHeader)) {
        iov[n++] = {reinterpret_cast<char*>(&f.hdr) + f.sent, sizeof(FrameHeader) - f.sent};
        if (f.hdr.chunkBytes > 0) iov[n++] = {const_cast<std::byte*>(f.data), f.hdr.chunkBytes};
      } else {
        size_t done = f.sent - sizeof(FrameHeader);
        iov[n++] = {const_cast<std::byte*>(f.data) + done, f.hdr.chunkBytes - done};
      }
      msghdr mh{};
      mh.msg_iov = iov;
      mh.msg_iovlen = n;
      ssize_t w = ::sendmsg(c.sock.fd(), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        lose(c.peer, std::string("send failed: ") + std::strerror(errno));
        return;
      }
      size_t before = f.sent;
      f.sent += static_cast<size_t>(w);
      size_t payloadBefore = before > sizeof(FrameHeader) ? before - sizeof(FrameHeader) : 0;
      size_t payloadNow = f.sent > sizeof(FrameHeader) ? f.sent - sizeof(FrameHeader) : 0;
      f.msg->req->addMoved(payloadNow - payloadBefore);
      changed_ = true;
      if (f.sent < total) return;
      if (--f.msg->framesLeft == 0) f.msg->req->complete();
      c.out.pop_front();
    }
  }

  void readConn(Conn& c) {
    Peer& peer = peers_[c.peer];
    while (!peer.lost && !c.parked && !c.eof) {
      if (c.hdrRead < sizeof(FrameHeader)) {
        ssize_t r = ::recv(c.sock.fd(), reinterpret_cast<char*>(&c.hdr) + c.hdrRead, sizeof(FrameHeader) - c.hdrRead,
                           MSG_DONTWAIT);
        if (!handleRead(c, r)) return;
        c.hdrRead += static_cast<size_t>(r);
        if (c.hdrRead < sizeof(FrameHeader)) continue;
      }
      if (c.target == nullptr) {  // a complete header, not yet bound to its receive
        if (!startFrame(c) || c.parked) return;
      }
      size_t left = c.hdr.chunkBytes - c.payloadRead;
      if (left > 0) {
        ssize_t r = ::recv(c.sock.fd(), c.target->buf + c.hdr.offset + c.payloadRead, left, MSG_DONTWAIT);
        if (!handleRead(c, r)) return;
        c.payloadRead += static_cast<size_t>(r);
        c.target->req->addMoved(static_cast<uint64_t>(r));
        changed_ = true;
        if (c.payloadRead < c.hdr.chunkBytes) continue;
      }
      finishFrame(c);
    }
  }

  // Interprets a recv() result: true if bytes arrived.
  bool handleRead(Conn& c, ssize_t r) {
    if (r > 0) return true;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    if (r < 0) {
      lose(c.peer, std::string("connection reset: ") + std::strerror(errno));
      return false;
    }
    c.eof = true;
    Peer& peer = peers_[c.peer];
    bool allEof = std::all_of(peer.conns.begin(), peer.conns.end(), [](Conn* x) { return x->eof; });
    if (allEof || c.hdrRead > 0) lose(c.peer, "connection closed by the peer (it exited or failed)");
    return false;
  }

  // A full header arrived: check it and bind it to its posted receive (or park the connection).
  bool startFrame(Conn& c) {
    Peer& peer = peers_[c.peer];
    std::string bad = tcp::checkFrame(c.hdr);
    if (!bad.empty()) {
      lose(c.peer, "protocol error: " + bad);
      return false;
    }
    auto it = peer.recvs.find(c.hdr.seq);
    if (it == peer.recvs.end()) {
      if (peer.closing && !stillComing(peer, false, CallTag{c.hdr.call, c.hdr.callSeq})) {
        // What follows on this connection belongs to the failed call or later: nothing more of use.
        c.eof = true;
        if (std::all_of(peer.conns.begin(), peer.conns.end(), [](Conn* x) { return x->eof; })) {
          lose(c.peer, "its connections ended");
        }
        return false;
      }
      setParked(c, true);  // the receive is not posted yet: leave the data in the kernel
      return true;
    }
    RecvMsg& m = it->second;
    const CallTag theirs{c.hdr.call, c.hdr.callSeq};
    std::string why;
    if (theirs.differsFrom(m.tag)) {
      why = callMismatch(c.peer, theirs, m.tag);
    } else if (c.hdr.totalBytes != m.bytes) {
      why = setup_.describeRank(c.peer) + " sent a message of " + std::to_string(c.hdr.totalBytes) +
            " bytes, but the matching receive on " + setup_.describeRank(setup_.rank) + " expects " +
            std::to_string(m.bytes) + " bytes (mismatched calls)";
    }
    if (!why.empty()) {
      m.req->fail(Status::kInvalidUsage, why);
      // The sender learns why, not just that the connection closed: a usage error of this call.
      // This rank's other requests with that peer fail with the same usage error (as a remote
      // error, whichever failed first decided the call's status: 2 runs in 100 of DifferentCollective).
      sendNotice(peer, why, Status::kInvalidUsage, m.tag.seq);
      loseWith(c.peer, why, Status::kInvalidUsage);
      return false;
    }
    c.target = &m;
    c.payloadRead = 0;
    return true;
  }

  void finishFrame(Conn& c) {
    Peer& peer = peers_[c.peer];
    RecvMsg* m = c.target;
    m->received += c.hdr.chunkBytes;
    if (m->received >= m->bytes) {
      m->req->complete();
      changed_ = true;
      peer.recvs.erase(c.hdr.seq);
    }
    c.target = nullptr;
    c.hdrRead = 0;
    c.payloadRead = 0;
  }

  // Writes "why" on the peer's control connection (bounded wait; it is otherwise idle, so the
  // notice normally goes out at once), with the failure's status and the call it happened in.
  void sendNotice(Peer& peer, const std::string& why, Status status = Status::kRemoteError, uint32_t failedCall = 0) {
    if (peer.control == nullptr || !peer.control->sock.valid()) return;
    std::vector<char> buf(sizeof(FrameHeader) + kNoticeBytes, 0);
    FrameHeader h{tcp::kFrameMagic, tcp::kWireVersion, static_cast<uint16_t>(status), kNoticeBytes, failedCall, 0, 0,
                  kNoticeBytes, 0};
    std::memcpy(buf.data(), &h, sizeof(h));
    std::memcpy(buf.data() + sizeof(h), why.data(), std::min<size_t>(why.size(), kNoticeBytes - 1));
    try {
      setNonBlocking(peer.control->sock.fd(), false);
      peer.control->sock.sendAll(buf.data(), buf.size(), Clock::now() + std::chrono::milliseconds(200));
    } catch (const Error&) {
      // The peer is gone too; nothing to tell.
    }
  }

  // Whether a request to or from a closing peer can still complete: a receive of a call before the
  // one it failed in, or an untagged one (user Send/Recv), whose data it may have sent before it
  // failed. Sends never: it reads nothing more.
  static bool stillComing(const Peer& peer, bool send, const CallTag& tag) {
    return !send && (tag.call == 0 || tag.seq < peer.closingCall);
  }

  // A notice said the peer failed in call `failedCall` (0: unknown, or not a collective).
  void noticed(int p, const std::string& message, Status status, uint32_t failedCall) {
    Peer& peer = peers_[p];
    if (failedCall == 0) {
      loseWith(p, message, status);
      return;
    }
    peer.closing = true;
    peer.closingCall = failedCall;
    peer.lostWhy = message;
    peer.lostStatus = status;
    logInfo("NET/TCP rank " + std::to_string(setup_.rank) + ": " + message + "; still reading what " +
            setup_.describeRank(p) + " sent for calls before #" + std::to_string(failedCall));
    // Fail what can no longer complete; what can stays, until the connections end.
    for (Conn* c : peer.conns) {
      for (auto& f : c->out) f.msg->req->fail(status, message);
      c->out.clear();
      if (c->parked && !stillComing(peer, false, CallTag{c->hdr.call, c->hdr.callSeq})) {
        setParked(*c, false);
        c->eof = true;
      }
    }
    for (auto it = peer.recvs.begin(); it != peer.recvs.end();) {
      // A receive a connection is reading a frame into stays (freeing it would leave that
      // connection writing through a dangling pointer); the connection's end fails it if need be.
      const bool reading =
          std::any_of(peer.conns.begin(), peer.conns.end(), [&](const Conn* c) { return c->target == &it->second; });
      if (stillComing(peer, false, it->second.tag) || it->second.received > 0 || reading) {
        ++it;
        continue;
      }
      it->second.req->fail(status, message);
      it = peer.recvs.erase(it);
    }
    changed_ = true;
    if (std::all_of(peer.conns.begin(), peer.conns.end(), [](Conn* x) { return x->eof; })) lose(p, "its connections ended");
  }

  // Reads an abort notice from a control connection; `wait`: give one that is on its way a
  // moment to arrive (the connection that failed may have been closed after the notice was sent).
  // Returns whether the peer was lost because of a notice.
  bool readNotice(Conn& c, bool wait) {
    Peer& peer = peers_[c.peer];
    const size_t want = sizeof(FrameHeader) + kNoticeBytes;
    auto deadline = Clock::now() + std::chrono::milliseconds(wait ? 100 : 0);
    for (;;) {
      char buf[4096];
      ssize_t r = ::recv(c.sock.fd(), buf, std::min(sizeof(buf), want - peer.notice.size()), MSG_DONTWAIT);
      if (r > 0) {
        peer.notice.insert(peer.notice.end(), buf, buf + r);
        if (peer.notice.size() < want) continue;
        FrameHeader h;
        std::memcpy(&h, peer.notice.data(), sizeof(h));
        std::string msg = tcp::checkFrame(h).empty() && h.chunkBytes == kNoticeBytes
                              ? std::string(peer.notice.data() + sizeof(h), strnlen(peer.notice.data() + sizeof(h), kNoticeBytes))
                              : std::string("(malformed notice)");
        NoticeFailure f = noticeFailure(msg, setup_.describeRank(c.peer));
        if (rootCause_.empty()) rootCause_ = f.root;
        const bool known = h.reserved == static_cast<uint16_t>(Status::kInvalidUsage) ||
                           h.reserved == static_cast<uint16_t>(Status::kTimeout) ||
                           h.reserved == static_cast<uint16_t>(Status::kAborted);
        noticed(c.peer, f.message, known ? static_cast<Status>(h.reserved) : Status::kRemoteError, h.callSeq);
        return true;
      }
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        // A peer that finished closes this too: only the data connections decide it is lost.
        if (!c.eof) epoll_ctl(epfd_, EPOLL_CTL_DEL, c.sock.fd(), nullptr);
        c.eof = true;
        return false;
      }
      if (Clock::now() >= deadline) return false;
      pollfd pf{c.sock.fd(), POLLIN, 0};
      ::poll(&pf, 1, 10);
    }
  }

  // A frame waits in the kernel for its receive to be posted; crossedCall() reads its tag.
  void setParked(Conn& c, bool parked) {
    c.parked = parked;
    std::lock_guard<std::mutex> lock(parkedMu_);
    if (parked) {
      parked_[&c] = Arrival{c.peer, CallTag{c.hdr.call, c.hdr.callSeq}};
    } else {
      parked_.erase(&c);
    }
  }

  std::string callMismatch(int peer, const CallTag& theirs, const CallTag& mine) const {
    return "collective mismatch: " + setup_.describeRank(peer) + " sent a message of its " + setup_.describeCall(theirs) +
           ", but " + setup_.describeRank(setup_.rank) + " is in its " + setup_.describeCall(mine);
  }

  void lose(int p, const std::string& why) {
    Peer& peer = peers_[p];
    if (peer.lost) return;
    if (!peer.closing && peer.control != nullptr && !peer.control->eof) readNotice(*peer.control, true);
    if (peer.lost) return;
    if (peer.closing) {  // the connections that still carried earlier calls ended: the notice stands
      loseWith(p, peer.lostWhy, peer.lostStatus);
      return;
    }
    loseUnexplained(p, "lost the connection to " + setup_.describeRank(p) + ": " + why);
  }

  // A peer gone without its own notice may have failed, and exited, for a cause found elsewhere
  // (a mismatch, a timeout) that another peer is relaying now: a peer it never connected to, or
  // one whose connection reset, got no notice from it. Such a notice, if one comes within 100 ms,
  // is the failure this peer's loss reports; otherwise `why`.
  void loseUnexplained(int p, const std::string& why) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(100);
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<int> from;
      for (auto& [q, other] : peers_) {
        if (q == p && other.lost) return;
        const bool explained = other.closing || other.lost;
        if (explained && other.lostStatus != Status::kRemoteError) {
          loseWith(p, other.lostWhy, other.lostStatus);
          return;
        }
        if (q == p || explained || other.control == nullptr || other.control->eof) continue;
        fds.push_back(pollfd{other.control->sock.fd(), POLLIN, 0});
        from.push_back(q);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (fds.empty() || left <= 0 || ::poll(fds.data(), fds.size(), static_cast<int>(left)) <= 0) break;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) readNotice(*peers_[from[i]].control, false);
      }
    }
    loseWith(p, why);
  }

  void loseWith(int p, const std::string& why, Status status = Status::kRemoteError) {
    Peer& peer = peers_[p];
    if (peer.lost) return;
    peer.lost = true;
    peer.lostWhy = why;
    peer.lostStatus = status;
    logInfo("NET/TCP rank " + std::to_string(setup_.rank) + ": " + peer.lostWhy);
    failPeer(peer, status, peer.lostWhy);
  }

  void failPeer(Peer& peer, Status s, const std::string& why) {
    std::vector<Conn*> all = peer.conns;
    if (peer.control != nullptr) all.push_back(peer.control);
    for (Conn* c : all) {
      for (auto& f : c->out) f.msg->req->fail(s, why);
      c->out.clear();
      c->target = nullptr;
      setParked(*c, false);
      if (c->sock.valid()) {
        epoll_ctl(epfd_, EPOLL_CTL_DEL, c->sock.fd(), nullptr);
        // FIN after what was written; closing with unread data would reset the connection and
        // could destroy a notice still in flight.
        ::shutdown(c->sock.fd(), SHUT_WR);
      }
    }
    for (auto& [seq, m] : peer.recvs) m.req->fail(s, why);
    peer.recvs.clear();
    for (auto& w : peer.waiting) w.req->fail(s, why);
    peer.waiting.clear();
    changed_ = true;
  }

  void failAll(const std::string& why) {
    for (auto& [p, peer] : peers_) {
      if (!peer.lost) {
        peer.lost = true;
        peer.lostWhy = why;
      }
      failPeer(peer, Status::kRemoteError, why);
    }
    if (setup_.wake) setup_.wake();
  }

  TransportSetup setup_;
  int nsocks_;
  // CFX_RUNTIME_CONNECT=1 (the default): connect to a peer when a request for it first comes, not
  // at init; the connections stay until the communicator goes. 0: every pair at init.
  const bool runtimeConnect_ = env::getString("CFX_RUNTIME_CONNECT") != "0";
  Socket listener_;                 // runtime connect: the lower ranks' connections arrive here
  std::vector<std::string> addrs_;  // runtime connect: every rank's listener
  char listenerMark_ = 0;           // the listener's epoll tag
  int connected_ = 0;
  int epfd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::map<int, Peer> peers_;  // progress thread only (after construction)
  bool changed_ = false;
  bool shutDown_ = false;

  PostQueue queue_;
  std::string rootCause_;  // the first failure a peer's notice reported: relayed, not re-wrapped

  struct Arrival {
    int peer;
    CallTag tag;
  };
  mutable std::mutex parkedMu_;  // guards parked_: written by the progress thread, read by waiters
  std::map<const Conn*, Arrival> parked_;

  std::thread thread_;
};

}  // namespace

std::unique_ptr<Transport> createTcpTransport(const TransportSetup& setup) {
  int64_t nsocks = env::getInt("CFX_NSOCKS");
  if (nsocks < 1 || nsocks > 64) {
    throw Error(Status::kInvalidArgument, "CFX_NSOCKS=" + std::to_string(nsocks) + " is out of range (1 to 64)");
  }
  return std::make_unique<TcpTransport>(setup, static_cast<int>(nsocks));
}

}  // namespace conflux::net
