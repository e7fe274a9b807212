#include "transport/net/ucx.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <thread>

#include <ucp/api/ucp.h>

#include "common/env.h"
#include "common/log.h"
#include "transport/net/notice.h"
#include "transport/net/post_queue.h"

namespace conflux::net {

namespace {

constexpr int kRankBits = 24;
constexpr int kNoticeChannel = 3;       // abort notices: why a rank failed
constexpr size_t kNoticeBytes = 512;
// A notice starting with this byte is a goodbye: the rank closed its communicator normally, so an
// endpoint error from it that follows is no failure, and a send to it that then fails had already
// been consumed (a rank closes only after its last operation completed).
constexpr char kByeMark = '\x01';

std::string ucsError(ucs_status_t s) { return ucs_status_string(s); }

class UcxTransport;

// One UCX operation in flight; owned by the transport until its callback ran.
struct Op {
  UcxTransport* self;
  RequestPtr req;
  int peer;
  bool send;
  size_t bytes;
  void* ucxReq = nullptr;
  bool notice = false;  // the internal receive of a peer's abort notice
};

// Tag bits: channel (4) | sequence number (36) | sender rank (24).
uint64_t tagSeq(int channel, uint64_t seq) {
  return (seq & ((uint64_t{1} << 36) - 1)) | (static_cast<uint64_t>(channel) << 36);
}

class UcxTransport final : public Transport {
 public:
  explicit UcxTransport(const TransportSetup& s) : setup_(s), queue_(s.nranks, &tagSeq) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    ucp_config_t* cfg = nullptr;
    check(ucp_config_read(nullptr, nullptr, &cfg), "ucp_config_read");
    if (s.nicIsRdma && !s.nic.empty() && std::getenv("UCX_NET_DEVICES") == nullptr) {
      // The plan's RDMA device, as NCCL picks one HCA per GPU; UCX_NET_DEVICES overrides.
      std::string dev = s.nic + ":1";
      if (ucp_config_modify(cfg, "NET_DEVICES", dev.c_str()) != UCS_OK) {
        ucp_config_release(cfg);
        throw Error(Status::kSystemError, "UCX: cannot restrict NET_DEVICES to " + dev);
      }
    }
    if (!s.nicIsRdma && std::getenv("UCX_ZCOPY_THRESH") == nullptr) {
      // Without an RDMA device UCX's network transport is TCP, whose zero-copy sends crash inside
      // UCX 1.13.1 when a peer dies with them in flight (assertion `comp->count > 0` or SIGSEGV in
      // uct_tcp_iface_progress: 4-11 runs in 30 of MultiHostShrink's AlltoAll cases, 0 in 30 with
      // zero-copy off; busbw across namespace hosts unchanged). UCX_ZCOPY_THRESH overrides.
      if (ucp_config_modify(cfg, "ZCOPY_THRESH", "inf") != UCS_OK) {
        ucp_config_release(cfg);
        throw Error(Status::kSystemError, "UCX: cannot set ZCOPY_THRESH");
      }
      logInfo("NET/UCX: no RDMA device: zero-copy sends off over TCP (UCX_ZCOPY_THRESH overrides)");
    }
    ucs_status_t st = ucp_init(&params, cfg, &ctx_);
    ucp_config_release(cfg);
    check(st, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the progress thread touches it
    check(ucp_worker_create(ctx_, &wp, &worker_), "ucp_worker_create");
    check(ucp_worker_get_efd(worker_, &workerFd_), "ucp_worker_get_efd");

    ucp_address_t* addr = nullptr;
    size_t len = 0;
    check(ucp_worker_get_address(worker_, &addr, &len), "ucp_worker_get_address");
    std::string mine(reinterpret_cast<const char*>(addr), len);
    ucp_worker_release_address(worker_, addr);
    if (mine.size() > kMaxAddressBytes) {
      throw Error(Status::kSystemError, "NET/UCX: the worker address is " + std::to_string(mine.size()) +
                                            " bytes, more than the " + std::to_string(kMaxAddressBytes) +
                                            " the bootstrap carries (restrict UCX_TLS)");
    }
    addresses_ = setup_.exchange(mine);
    if (!runtimeConnect_) {
      for (int p : setup_.peers) check(connect(p), "ucp_ep_create to rank " + std::to_string(p));
    }
    for (int p : setup_.peers) {
      notices_[p].assign(kNoticeBytes, 0);
      start(Post{false, p, reinterpret_cast<std::byte*>(notices_[p].data()), kNoticeBytes, tagSeq(kNoticeChannel, 0), {},
                 std::make_shared<Request>()},
            true);
    }
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, queue_.fd(), &ev);
    epoll_ctl(epfd_, EPOLL_CTL_ADD, workerFd_, &ev);
    thread_ = std::thread([this] { run(); });
  }

  ~UcxTransport() override {
    queue_.stop();
    thread_.join();
    ::close(epfd_);
    ucp_worker_destroy(worker_);
    ucp_cleanup(ctx_);
  }

  const char* name() const override { return "ucx"; }

  // UCX matches by its own tags and delivers no header of ours: call tags are not checked here
  // (mismatched calls end in a size error or a timeout, as before).
  RequestPtr postSend(int peer, int channel, const void* buf, size_t bytes, CallTag /*tag*/) override {
    return queue_.post(true, peer, channel, static_cast<std::byte*>(const_cast<void*>(buf)), bytes, {});
  }
  RequestPtr postRecv(int peer, int channel, void* buf, size_t bytes, CallTag /*tag*/) override {
    return queue_.post(false, peer, channel, static_cast<std::byte*>(buf), bytes, {});
  }

  // Synchronous: when it returns, the progress thread holds no pointer into user buffers.
  void shutdown(const std::string& why, Status status, uint32_t failedCall) override {
    queue_.shutdown(why, status, failedCall);
  }

 private:
  static void check(ucs_status_t s, const std::string& what) {
    if (s != UCS_OK) throw Error(Status::kSystemError, "NET/UCX: " + what + " failed: " + ucsError(s));
  }

  // ---- progress thread ------------------------------------------------------------------------

  void run() {
    epoll_event events[4];
    for (;;) {
      if (!drainPosts()) break;
      while (ucp_worker_progress(worker_) != 0) {
      }
      handleLosses();
      if (changed_) {
        changed_ = false;
        if (setup_.wake) setup_.wake();
      }
      ucs_status_t st = ucp_worker_arm(worker_);
      if (st == UCS_ERR_BUSY) continue;  // more events arrived: progress again
      epoll_wait(epfd_, events, 4, 100);
    }
    closeAll();
    queue_.stopped();
  }

  bool drainPosts() {
    std::deque<Post> posts;
    ShutdownRequest shutdown;
    if (!queue_.take(posts, shutdown)) return false;
    // UCX fails everything at once: the failure's status and call are not needed.
    const std::string& why = shutdown.why;
    if (!why.empty() && !shutDown_) {
      shutDown_ = true;
      sendNotices(noticeText(why, rootCause_));
      for (int p : setup_.peers) lose(p, why);
      queue_.shutdownDone();
    }
    for (auto& p : posts) start(p);
    return true;
  }

  // Tells every reachable peer why this rank fails, or (kByeMark) that it closes normally; bounded
  // wait, before endpoints close. Only peers with an endpoint: the others never exchanged a message
  // with this rank (either side's first one creates both sides' endpoints), and one that tries later
  // finds this rank gone when its endpoint fails.
  void sendNotices(const std::string& why) {
    std::string& msg = noticeOut_;
    msg = why.substr(0, kNoticeBytes - 1);
    msg.resize(kNoticeBytes, '\0');
    std::vector<RequestPtr> reqs;
    std::vector<int> connected;
    for (auto& [p, ep] : eps_) connected.push_back(p);
    for (int p : connected) {
      if (lost_.count(p)) continue;
      auto req = std::make_shared<Request>();
      start(Post{true, p, reinterpret_cast<std::byte*>(msg.data()), kNoticeBytes, tagSeq(kNoticeChannel, 0), {}, req});
      reqs.push_back(req);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < deadline) {
      ucp_worker_progress(worker_);
      bool pending = false;
      for (auto& r : reqs) pending |= !r->finished();
      if (!pending) break;
    }
  }

  // Creates the endpoint to `peer` (UCX connects it in the background).
  ucs_status_t connect(int peer) {
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                    UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(addresses_.at(peer).data());
    ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep.err_handler.cb = &UcxTransport::onEndpointError;
    ep.err_handler.arg = this;
    ucp_ep_h h = nullptr;
    ucs_status_t st = ucp_ep_create(worker_, &ep, &h);
    if (st != UCS_OK) return st;
    eps_[peer] = h;
    epPeer_[h] = peer;
    if (runtimeConnect_) {
      logInfo("NET/UCX rank " + std::to_string(setup_.rank) + ": endpoint to " + setup_.describeRank(peer) +
              " (first use; " + std::to_string(eps_.size()) + " endpoints)");
    }
    return UCS_OK;
  }

  void start(const Post& p, bool notice = false) {
    if (auto it = lost_.find(p.peer); it != lost_.end()) {
      p.req->fail(Status::kRemoteError, it->second);
      changed_ = true;
      return;
    }
    // On demand (CFX_RUNTIME_CONNECT): a rank's first send to or receive from a peer creates its
    // endpoint, on both sides, so a peer that dies is seen by an endpoint error on either side.
    if (!notice && eps_.count(p.peer) == 0) {
      if (ucs_status_t st = connect(p.peer); st != UCS_OK) {
        p.req->fail(Status::kRemoteError, "NET/UCX: no endpoint to " + setup_.describeRank(p.peer) + ": " + ucsError(st));
        changed_ = true;
        return;
      }
    }
    auto* op = new Op{this, p.req, p.peer, p.send, p.bytes, nullptr, notice};
    ucp_request_param_t prm{};
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.datatype = ucp_dt_make_contig(1);
    prm.user_data = op;
    ucp_tag_t tag = (p.seq << kRankBits) | static_cast<ucp_tag_t>(p.send ? setup_.rank : p.peer);
    // The callback may run inside the call (a message already waiting): it must then find the
    // operation registered, and must leave deleting it to us.
    inflight_.emplace(op, p.peer);
    starting_ = op;
    startFinished_ = false;
    ucs_status_ptr_t r;
    if (p.send) {
      prm.cb.send = &UcxTransport::onSend;
      r = ucp_tag_send_nbx(eps_.at(p.peer), p.buf, p.bytes, tag, &prm);
    } else {
      prm.cb.recv = &UcxTransport::onRecv;
      r = ucp_tag_recv_nbx(worker_, p.buf, p.bytes, tag, ~ucp_tag_t{0}, &prm);
    }
    starting_ = nullptr;
    if (startFinished_) {
      delete op;
      return;
    }
    if (UCS_PTR_IS_ERR(r)) {
      inflight_.erase(op);
      p.req->fail(Status::kRemoteError, "NET/UCX: posting to " + setup_.describeRank(p.peer) + " failed: " +
                                            ucsError(UCS_PTR_STATUS(r)));
      delete op;
      changed_ = true;
      return;
    }
    op->ucxReq = r;
  }

  void finish(Op* op, ucs_status_t st, size_t length) {
    if (op->notice) {
      inflight_.erase(op);
      if (op->ucxReq != nullptr) ucp_request_free(op->ucxReq);
      if (st == UCS_OK) {
        const std::string& buf = notices_[op->peer];
        if (buf[0] == kByeMark) {
          bye_.insert(op->peer);
        } else {
          NoticeFailure f = noticeFailure(std::string(buf.c_str()), setup_.describeRank(op->peer));
          if (rootCause_.empty()) rootCause_ = f.root;
          lose(op->peer, f.message);
        }
      }
      release(op);
      return;
    }
    if (st == UCS_OK && !op->send && length != op->bytes) {
      op->req->fail(Status::kInvalidUsage, setup_.describeRank(op->peer) + " sent a message of " +
                                               std::to_string(length) + " bytes, but the matching receive expects " +
                                               std::to_string(op->bytes) + " bytes (mismatched calls)");
    } else if (st == UCS_ERR_MESSAGE_TRUNCATED) {
      op->req->fail(Status::kInvalidUsage, setup_.describeRank(op->peer) +
                                               " sent a message larger than the matching receive (" +
                                               std::to_string(op->bytes) + " bytes; mismatched calls)");
    } else if (st != UCS_OK && !lost_.count(op->peer)) {
      // The endpoint failed, and its error callback may not have run yet. Decide in handleLosses,
      // after a moment for a notice or goodbye from that peer: a send the peer consumed before it
      // closed normally succeeded; anything else is the lost connection (the same words as the
      // endpoint's error, not UCX's status alone: a link that came back surfaced here as "transfer
      // failed: Endpoint timeout", naming neither a timeout nor a loss, in MultiHostFault.LinkCut).
      deferred_.push_back(Deferred{op->req, op->peer, op->bytes, op->send, st,
                                   std::chrono::steady_clock::now() + std::chrono::milliseconds(100)});
    } else if (st != UCS_OK) {
      op->req->fail(Status::kRemoteError, lost_.at(op->peer));
    } else {
      op->req->addMoved(op->bytes);
      op->req->complete();
    }
    changed_ = true;
    inflight_.erase(op);
    if (op->ucxReq != nullptr) ucp_request_free(op->ucxReq);
    release(op);
  }

  void release(Op* op) {
    if (op == starting_) {
      startFinished_ = true;  // start() deletes it after the call returns
    } else {
      delete op;
    }
  }

  static void onSend(void* request, ucs_status_t st, void* user) {
    auto* op = static_cast<Op*>(user);
    op->ucxReq = request;
    op->self->finish(op, st, op->bytes);
  }

  static void onRecv(void* request, ucs_status_t st, const ucp_tag_recv_info_t* info, void* user) {
    auto* op = static_cast<Op*>(user);
    op->ucxReq = request;
    op->self->finish(op, st, info != nullptr ? info->length : 0);
  }

  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t st) {
    auto* self = static_cast<UcxTransport*>(arg);
    auto it = self->epPeer_.find(ep);
    if (it == self->epPeer_.end()) return;
    self->pendingLoss_.emplace_back(it->second, "lost the connection to " + self->setup_.describeRank(it->second) +
                                                    ": " + ucsError(st));
  }

  // Endpoint errors are handled outside UCX's callback: first give a notice on its way from that
  // peer a moment to arrive, so the error names the rank that failed first.
  // A peer that said goodbye is not lost: only receives still waiting on it fail.
  void handleLosses() {
    while (!pendingLoss_.empty()) {
      auto [peer, why] = pendingLoss_.front();
      pendingLoss_.erase(pendingLoss_.begin());
      auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      while (!lost_.count(peer) && !bye_.count(peer) && std::chrono::steady_clock::now() < deadline) {
        ucp_worker_progress(worker_);
      }
      lose(peer, bye_.count(peer) ? closedEarly(peer) : why);
    }
    for (size_t i = 0; i < deferred_.size();) {
      Deferred& d = deferred_[i];
      if (bye_.count(d.peer) && d.send) {
        d.req->addMoved(d.bytes);
        d.req->complete();
      } else if (bye_.count(d.peer) || lost_.count(d.peer) || std::chrono::steady_clock::now() >= d.deadline) {
        if (!lost_.count(d.peer)) {
          lose(d.peer, bye_.count(d.peer) ? closedEarly(d.peer)
                                          : "lost the connection to " + setup_.describeRank(d.peer) + ": " +
                                                ucsError(d.status));
        }
        d.req->fail(Status::kRemoteError, lost_.at(d.peer));
      } else {
        ++i;
        continue;
      }
      changed_ = true;
      deferred_.erase(deferred_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  // Why a peer that said goodbye fails what this rank still waits for from it.
  std::string closedEarly(int peer) const {
    return setup_.describeRank(peer) + " closed its communicator while this rank still expected data from it";
  }

  // Marks a peer lost and cancels its pending receives (sends on the failed endpoint complete
  // with an error by themselves).
  void lose(int peer, const std::string& why) {
    if (lost_.count(peer)) return;
    lost_[peer] = why;
    logInfo("NET/UCX rank " + std::to_string(setup_.rank) + ": " + why);
    std::vector<Op*> victims;
    const bool byed = bye_.count(peer) > 0;
    for (auto& [op, p] : inflight_) {
      if (p == peer && !op->notice && !(byed && op->send)) victims.push_back(op);
    }
    for (Op* op : victims) op->req->fail(Status::kRemoteError, why);
    for (Op* op : victims) {
      if (!op->send && inflight_.count(op)) ucp_request_cancel(worker_, op->ucxReq);
    }
    if (auto e = eps_.find(peer); e != eps_.end()) {
      // Force-close: a failed endpoint cannot be flushed.
      ucp_request_param_t prm{};
      prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t r = ucp_ep_close_nbx(e->second, &prm);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing_.push_back(r);
      epPeer_.erase(e->second);
      eps_.erase(e);
    }
    changed_ = true;
  }

  // Normal teardown: flush-close every endpoint (bounded), then cancel what is left.
  void closeAll() {
    if (!shutDown_) {
      sendNotices(std::string(1, kByeMark));
      // Close only once every peer has said goodbye too (bounded): a peer says it after its last
      // operation completed, so by then it holds everything this rank sent. Closing earlier let a
      // goodbye and the endpoint error overtake eager data still on its way over another lane,
      // failing the peer's receive (seen in MultiHostSplit under ASan).
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (std::chrono::steady_clock::now() < until) {
        bool all = true;
        for (auto& [p, ep] : eps_) all = all && (bye_.count(p) > 0 || lost_.count(p) > 0);
        if (all) break;
        if (ucp_worker_progress(worker_) == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    std::vector<Op*> recvs;  // cancelling may run the callback, which edits inflight_
    for (auto& [op, p] : inflight_) {
      if (!op->send) recvs.push_back(op);
    }
    for (Op* op : recvs) ucp_request_cancel(worker_, op->ucxReq);
    for (auto& [p, ep] : eps_) {
      ucp_request_param_t prm{};
      ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &prm);
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing_.push_back(r);
    }
    eps_.clear();
    epPeer_.clear();
    // After a failure nothing is flushed (every peer is lost, its endpoint force-closed): progressing
    // UCX's TCP interface on then crashed inside UCX, 1 run in 10-20 of MultiHostFault.LinkCut over
    // UCX with UCX 1.13 (uct_tcp_iface_progress, on endpoints whose link came back).
    auto deadline = std::chrono::steady_clock::now() + (shutDown_ ? std::chrono::seconds(0) : std::chrono::seconds(10));
    while (std::chrono::steady_clock::now() < deadline) {
      ucp_worker_progress(worker_);
      bool pending = false;
      for (void* r : closing_) pending |= ucp_request_check_status(r) == UCS_INPROGRESS;
      if (!pending && inflight_.empty()) break;
    }
    for (void* r : closing_) ucp_request_free(r);
    closing_.clear();
    for (auto& [op, p] : inflight_) op->req->fail(Status::kRemoteError, "the transport was closed");
    for (Deferred& d : deferred_) d.req->fail(Status::kRemoteError, "the transport was closed");
    deferred_.clear();
    if (setup_.wake) setup_.wake();
  }

  TransportSetup setup_;
  ucp_context_h ctx_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int workerFd_ = -1;
  int epfd_ = -1;
  // Endpoints on first use only when CFX_RUNTIME_CONNECT=1 is set explicitly; by default they are
  // made at init. On demand, an endpoint can still be wiring up when its peer dies, and UCX 1.13.1
  // (Debian's) then aborts the surviving rank on an assertion in ucp_request_send_state_ff ("got REP
  // message", removed upstream by openucx/ucx#8175): Each/MultiHostShrink.KilledRankShrunkAway/
  // AlltoAllv on 2+2+2, 1 run in 13 (2026-11-26); never seen with endpoints made at init.
  const bool runtimeConnect_ = std::getenv("CFX_RUNTIME_CONNECT") != nullptr && env::getString("CFX_RUNTIME_CONNECT") == "1";
  std::vector<std::string> addresses_;  // every rank's worker address
  std::map<int, ucp_ep_h> eps_;        // progress thread only, after construction
  std::map<ucp_ep_h, int> epPeer_;
  std::map<Op*, int> inflight_;
  std::map<int, std::string> lost_;
  std::vector<void*> closing_;
  Op* starting_ = nullptr;
  bool startFinished_ = false;
  std::map<int, std::string> notices_;
  std::string noticeOut_;  // receive buffers for the peers' abort notices
  std::vector<std::pair<int, std::string>> pendingLoss_;
  std::set<int> bye_;  // peers that closed normally
  // Transfers that failed before their peer was known lost (finish), settled in handleLosses.
  struct Deferred {
    RequestPtr req;
    int peer;
    size_t bytes;
    bool send;
    ucs_status_t status;
    std::chrono::steady_clock::time_point deadline;
  };
  std::vector<Deferred> deferred_;
  bool changed_ = false;
  bool shutDown_ = false;

  PostQueue queue_;
  std::string rootCause_;  // the first failure a peer's notice reported: relayed, not re-wrapped

  std::thread thread_;
};

}  // namespace

bool ucxAvailable() { return true; }

std::unique_ptr<Transport> createUcxTransport(const TransportSetup& setup) {
  return std::make_unique<UcxTransport>(setup);
}

}  // namespace conflux::net
