#include "hier/hier_ops.h"

#include <algorithm>
#include <cstring>

#include "common/arith.h"
#include "hier/net_algos.h"
#include "ops/call_tag.h"
#include "reduce/kernels.h"

namespace conflux::hier {

namespace {

// Where this rank sits, and the groups the algorithms use.
struct Place {
  const HostMap& hosts;
  int rank, host, local, localSize, nhosts;
  Place(const HierEnv& e)
      : hosts(*e.hosts),
        rank(e.rank),
        host(e.hosts->hostOf[e.rank]),
        local(e.hosts->localRankOf[e.rank]),
        localSize(static_cast<int>(e.hosts->ranksOn[host].size())),
        nhosts(e.hosts->nhosts()) {}

  // The ranks with local rank `l` on every host, in host order (uniform hosts).
  Group sameLocal(int l) const {
    Group g;
    for (int h = 0; h < nhosts; ++h) g.members.push_back(hosts.rankAt(h, l));
    g.me = l == local ? host : -1;
    return g;
  }
  // One leader per host, in host order starting at `first`: `firstLeader` on that host, local
  // rank 0 elsewhere.
  Group leaders(int first = 0, int firstLeader = -1) const {
    Group g;
    for (int k = 0; k < nhosts; ++k) {
      int h = (first + k) % nhosts;
      int r = (k == 0 && firstLeader >= 0) ? firstLeader : hosts.rankAt(h, 0);
      if (r == rank) g.me = k;
      g.members.push_back(r);
    }
    return g;
  }
  // Offset (in ranks) of host h's block when ranks are ordered by host.
  size_t hostOffset(int h) const {
    size_t off = 0;
    for (int k = 0; k < h; ++k) off += hosts.ranksOn[k].size();
    return off;
  }
};

// Copies `elems` elements of `es` bytes (a value, so the closures below own everything they use;
// the host table belongs to the communicator and outlives its operations).
struct Copy {
  size_t es;
  void operator()(void* dst, const void* src, size_t elems) const {
    if (dst != src && elems > 0) std::memcpy(dst, src, elems * es);
  }
};

class Builder {
 public:
  Builder(const CollArgs& a, const HierEnv& e, uint32_t callSeq)
      : a_(a), e_(e), p_(e), es_(reduce::dataTypeSize(a.datatype)), seq_(std::make_unique<Sequence>()) {
    comb_ = Combine{a.datatype, a.op, e.nranks};
    localOp_ = reduce::partialOp(a.op);  // Avg divides once, at the end
    e_.net.call = net::CallTag{packCall(callDescriptor(a)), callSeq};
  }

  std::unique_ptr<Op> build() {
    switch (a_.coll) {
      case Coll::kAllReduce: allReduce(); break;
      case Coll::kReduce: reduceToRoot(); break;
      case Coll::kBroadcast: broadcast(); break;
      case Coll::kAllGather: allGather(); break;
      case Coll::kReduceScatter: reduceScatter(); break;
      case Coll::kAlltoAll: alltoAll(); break;
    }
    return std::make_unique<CallScope>(e_.net, std::move(seq_));
  }

 private:
  std::byte* scratch(size_t elems) { return seq_->scratch().get(elems * es_); }
  const std::byte* send() const { return static_cast<const std::byte*>(a_.send); }
  std::byte* recv() const { return static_cast<std::byte*>(a_.recv); }
  // A shared-memory step of this call; its descriptor names the call, so local ranks in different
  // calls fail with a mismatch even where the steps look alike.
  std::unique_ptr<Op> step(Coll c, const void* s, void* r, size_t count, cfxRedOp_t op, int root = -1) const {
    CollArgs args{c, s, r, count, a_.datatype, op, root, e_.net.call.call, e_.net.call.seq};
    return makeCollective(args, *e_.tuning, p_.localSize);
  }
  void local(Coll c, const void* s, void* r, size_t count, int root = -1) { seq_->add(step(c, s, r, count, localOp_, root)); }
  void action(std::function<void()> f) { seq_->add(makeLocalAction(std::move(f))); }

  std::unique_ptr<Op> netAllReduce(const Group& g, std::byte* buf, size_t count) {
    switch (chooseNetAlgo(count * es_, g.size(), *e_.tuning)) {
      case NetAlgo::kTree: return treeAllReduce(e_.net, g, buf, count, comb_, seq_->scratch());
      case NetAlgo::kHalvingDoubling: return hdAllReduce(e_.net, g, buf, count, comb_, seq_->scratch());
      default: return ringAllReduce(e_.net, g, buf, count, comb_, seq_->scratch());
    }
  }

  // AllReduce.
  //  hfreduce (same ranks on every host, large buffers): reduce-scatter inside the host, so local
  //    rank l holds the host's sum of slice l; allreduce slice l with local rank l of every other
  //    host (all local ranks, and their NICs, at once); all-gather inside the host. A tail of
  //    fewer than L elements goes through the leaders.
  //  leaders (small buffers, or uneven hosts): reduce to local rank 0, allreduce among the
  //    hosts' rank 0s, broadcast inside the host.
  //  flat (CFX_ALGO=flat): one ring over all ranks in host order, no shared memory: the
  //    baseline the hierarchy is measured against.
  void allReduce() {
    const size_t n = a_.count;
    if (e_.tuning->net == NetAlgo::kFlat) {
      Group g;
      for (int h = 0; h < p_.nhosts; ++h) {
        for (int r : p_.hosts.ranksOn[h]) {
          if (r == p_.rank) g.me = g.size();
          g.members.push_back(r);
        }
      }
      action([cp = Copy{es_}, r = recv(), sd = send(), n] { cp(r, sd, n); });
      seq_->add(ringAllReduce(e_.net, g, recv(), n, comb_, seq_->scratch()));
      return;
    }
    const int L = p_.localSize;
    const bool hfreduce = p_.hosts.uniform() && L > 1 && n * es_ >= kHfreduceMinBytes;
    const size_t s = hfreduce ? n / L : 0;
    if (s > 0) {
      // Pipelined by chunks of c elements per local rank: in-host phases in lane 0 (RS0, RS1, AG0,
      // RS2, AG1, ...), network allreduces in lane 1, so the phases of neighbouring chunks overlap.
      const size_t c = std::max<size_t>(kPipelineMinBytes / es_ / L, ceilDiv(s, kPipelineChunks));
      const size_t nchunks = ceilDiv(s, c);
      auto lanes = std::make_unique<Lanes>();
      const Group group = p_.sameLocal(p_.local);
      int prevAr = -1;
      for (size_t k = 0; k <= nchunks; ++k) {
        if (k < nchunks) {
          const size_t len = std::min(c, s - k * c), base = k * c * L;  // chunk k: [base, base + len L)
          std::byte* mine = recv() + (base + p_.local * len) * es_;
          int rs = lanes->add(0, step(Coll::kReduceScatter, send() + base * es_, mine, len, localOp_));
          int ar = lanes->add(1, netAllReduce(group, mine, len), rs);
          if (prevAr >= 0) addGather(*lanes, k - 1, c, s, prevAr);
          prevAr = ar;
        } else {
          addGather(*lanes, k - 1, c, s, prevAr);
        }
      }
      seq_->add(std::move(lanes));
    }
    const size_t off = s * L, rest = n - off;
    if (rest == 0 && s > 0) return;
    local(Coll::kReduce, send() + off * es_, recv() + off * es_, rest, 0);
    seq_->add(netAllReduce(p_.leaders(), recv() + off * es_, rest));
    local(Coll::kBroadcast, recv() + off * es_, recv() + off * es_, rest, 0);
  }

  // All-gather inside the host of pipelined chunk k, once its network allreduce `ar` finished.
  void addGather(Lanes& lanes, size_t k, size_t c, size_t s, int ar) {
    const int L = p_.localSize;
    const size_t len = std::min(c, s - k * c), base = k * c * L;
    std::byte* mine = recv() + (base + p_.local * len) * es_;
    lanes.add(0, step(Coll::kAllGather, mine, recv() + base * es_, len, localOp_), ar);
  }

  // Reduce: inside each host to its leader (the root on the root's host), then a binomial tree
  // among the leaders toward the root.
  void reduceToRoot() {
    const size_t n = a_.count;
    const int rootHost = p_.hosts.hostOf[a_.root];
    const int leader = p_.host == rootHost ? a_.root : p_.hosts.rankAt(p_.host, 0);
    std::byte* acc = p_.rank == a_.root ? recv() : scratch(n);
    local(Coll::kReduce, send(), acc, n, p_.hosts.localRankOf[leader]);
    seq_->add(binomialReduce(e_.net, p_.leaders(rootHost, a_.root), acc, n, comb_, seq_->scratch()));
  }

  // Broadcast: a pipelined chain among the hosts' leaders starting at the root, then a broadcast
  // inside each host from its leader.
  void broadcast() {
    const size_t n = a_.count;
    const int rootHost = p_.hosts.hostOf[a_.root];
    const int leader = p_.host == rootHost ? a_.root : p_.hosts.rankAt(p_.host, 0);
    std::byte* buf = p_.rank == a_.root ? const_cast<std::byte*>(send()) : recv();
    seq_->add(chainBroadcast(e_.net, p_.leaders(rootHost, a_.root), buf, n * es_));
    const std::byte* src = p_.host == rootHost ? send() : recv();
    local(Coll::kBroadcast, src, recv(), n, p_.hosts.localRankOf[leader]);
  }

  // AllGather.
  //  uniform hosts: local rank l gathers the inputs of local rank l on every host (a ring among
  //    them), then an all-gather inside the host completes the set; blocks are put in rank order.
  //  uneven hosts: gather inside the host, ring among the leaders with one block per host,
  //    broadcast inside the host.
  void allGather() {
    const size_t c = a_.count;
    const int H = p_.nhosts, L = p_.localSize;
    if (p_.hosts.uniform()) {
      std::byte* A = scratch(H * c);  // [host]
      std::byte* B = scratch(static_cast<size_t>(L) * H * c);  // [local][host]
      action([cp = Copy{es_}, dst = A + p_.host * c * es_, sd = send(), c] { cp(dst, sd, c); });
      std::vector<std::byte*> ptr(H);
      std::vector<size_t> len(H, c * es_);
      for (int h = 0; h < H; ++h) ptr[h] = A + h * c * es_;
      seq_->add(ringAllGatherV(e_.net, p_.sameLocal(p_.local), ptr, len));
      local(Coll::kAllGather, A, B, H * c);
      action([cp = Copy{es_}, r = recv(), &hosts = p_.hosts, B, c, L, H] {
        for (int l = 0; l < L; ++l) {
          for (int h = 0; h < H; ++h) cp(r + hosts.rankAt(h, l) * c * cp.es, B + (l * H + h) * c * cp.es, c);
        }
      });
      return;
    }
    const size_t total = static_cast<size_t>(e_.nranks) * c;
    std::byte* B = scratch(total);  // blocks in host order
    local(Coll::kAllGather, send(), B + p_.hostOffset(p_.host) * c * es_, c);
    std::vector<std::byte*> ptr(H);
    std::vector<size_t> len(H);
    for (int h = 0; h < H; ++h) {
      ptr[h] = B + p_.hostOffset(h) * c * es_;
      len[h] = p_.hosts.ranksOn[h].size() * c * es_;
    }
    seq_->add(ringAllGatherV(e_.net, p_.leaders(), ptr, len));
    local(Coll::kBroadcast, B, B, total, 0);
    action([cp = Copy{es_}, r = recv(), &hosts = p_.hosts, B, c] {
      size_t off = 0;
      for (const auto& ranks : hosts.ranksOn) {
        for (size_t l = 0; l < ranks.size(); ++l) cp(r + ranks[l] * c * cp.es, B + (off + l) * c * cp.es, c);
        off += ranks.size();
      }
    });
  }

  // ReduceScatter.
  //  uniform hosts: reorder the input as [local rank][host], reduce-scatter inside the host (local
  //    rank l gets the host's sum of the blocks of local rank l on every host), then a ring
  //    reduce-scatter among local rank l of every host.
  //  uneven hosts: reorder by host, reduce to the leader, ring reduce-scatter of host blocks
  //    among the leaders, broadcast of the host block inside the host.
  void reduceScatter() {
    const size_t c = a_.count;
    const int H = p_.nhosts, L = p_.localSize;
    const size_t total = static_cast<size_t>(e_.nranks) * c;
    std::byte* P = scratch(total);
    if (p_.hosts.uniform()) {
      std::byte* Q = scratch(H * c);
      action([cp = Copy{es_}, sd = send(), &hosts = p_.hosts, P, c, L, H] {
        for (int l = 0; l < L; ++l) {
          for (int h = 0; h < H; ++h) cp(P + (l * H + h) * c * cp.es, sd + hosts.rankAt(h, l) * c * cp.es, c);
        }
      });
      local(Coll::kReduceScatter, P, Q, H * c);
      std::vector<size_t> off(H), cnt(H, c);
      for (int h = 0; h < H; ++h) off[h] = h * c;
      seq_->add(ringReduceScatter(e_.net, p_.sameLocal(p_.local), Q, off, cnt, recv(), comb_, seq_->scratch()));
      return;
    }
    std::byte* Q = scratch(total);
    std::byte* mine = scratch(L * c);
    action([cp = Copy{es_}, sd = send(), &hosts = p_.hosts, P, c] {
      size_t off = 0;
      for (const auto& ranks : hosts.ranksOn) {
        for (size_t l = 0; l < ranks.size(); ++l) cp(P + (off + l) * c * cp.es, sd + ranks[l] * c * cp.es, c);
        off += ranks.size();
      }
    });
    local(Coll::kReduce, P, Q, total, 0);
    std::vector<size_t> off(H), cnt(H);
    for (int h = 0; h < H; ++h) {
      off[h] = p_.hostOffset(h) * c;
      cnt[h] = p_.hosts.ranksOn[h].size() * c;
    }
    seq_->add(ringReduceScatter(e_.net, p_.leaders(), Q, off, cnt, mine, comb_, seq_->scratch()));
    local(Coll::kBroadcast, mine, mine, L * c, 0);
    action([cp = Copy{es_}, r = recv(), src = mine + p_.local * c * es_, c] { cp(r, src, c); });
  }

  // AlltoAll: pairwise exchange with every rank on other hosts (step k: send to rank + k, receive
  // from rank - k) while the blocks among this host's ranks go through a shared-memory AlltoAll.
  void alltoAll() {
    const size_t c = a_.count;
    const int n = e_.nranks, L = p_.localSize;
    const std::byte* src = send();
    if (a_.send == a_.recv) {
      std::byte* S = scratch(n * c);
      action([cp = Copy{es_}, S, sd = send(), total = n * c] { cp(S, sd, total); });
      src = S;
    }
    std::vector<Step> steps;
    for (int k = 1; k < n; ++k) {
      int to = (p_.rank + k) % n, from = (p_.rank - k + n) % n;
      Step st;
      if (p_.hosts.hostOf[to] != p_.host) st.xfers.push_back({to, true, const_cast<std::byte*>(src) + to * c * es_, c * es_});
      if (p_.hosts.hostOf[from] != p_.host) st.xfers.push_back({from, false, recv() + from * c * es_, c * es_});
      if (!st.xfers.empty()) steps.push_back(std::move(st));
    }
    auto par = std::make_unique<Parallel>();
    par->add(std::make_unique<NetSchedule>(e_.net, "pairwise AlltoAll", std::move(steps)));
    auto inHost = std::make_unique<Sequence>();
    std::byte* P = inHost->scratch().get(L * c * es_);
    std::byte* Q = inHost->scratch().get(L * c * es_);
    const auto& mates = p_.hosts.ranksOn[p_.host];
    inHost->add(makeLocalAction([cp = Copy{es_}, &mates, P, src, c, L] {
      for (int l = 0; l < L; ++l) cp(P + l * c * cp.es, src + mates[l] * c * cp.es, c);
    }));
    inHost->add(step(Coll::kAlltoAll, P, Q, c, cfxSum));
    inHost->add(makeLocalAction([cp = Copy{es_}, &mates, r = recv(), Q, c, L] {
      for (int l = 0; l < L; ++l) cp(r + mates[l] * c * cp.es, Q + l * c * cp.es, c);
    }));
    par->add(std::move(inHost));
    seq_->add(std::move(par));
  }

  static constexpr size_t kHfreduceMinBytes = 32 << 10;
  static constexpr size_t kPipelineChunks = 8;            // chunks per AllReduce at most ...
  static constexpr size_t kPipelineMinBytes = 4 << 20;    // ... of at least this many bytes each

  CollArgs a_;
  HierEnv e_;
  Place p_;
  size_t es_;
  std::unique_ptr<Sequence> seq_;
  Combine comb_;
  cfxRedOp_t localOp_;
};

}  // namespace

std::unique_ptr<Op> makeHierCollective(const CollArgs& a, const HierEnv& env, uint32_t callSeq) {
  return Builder(a, env, callSeq).build();
}

std::unique_ptr<Op> makeHierSend(const HierEnv& env, const void* buf, size_t bytes, int peer) {
  const HostMap& h = *env.hosts;
  if (h.hostOf[peer] == h.hostOf[env.rank]) return makeSend(buf, bytes, h.localRankOf[peer], peer);
  return makeNetSend(env.net, buf, bytes, peer);
}

std::unique_ptr<Op> makeHierRecv(const HierEnv& env, void* buf, size_t bytes, int peer) {
  const HostMap& h = *env.hosts;
  if (h.hostOf[peer] == h.hostOf[env.rank]) return makeRecv(buf, bytes, h.localRankOf[peer], peer);
  return makeNetRecv(env.net, buf, bytes, peer);
}

}  // namespace conflux::hier
