#include "hier/net_algos.h"

#include <algorithm>

#include "common/arith.h"
#include "patterns/double_binary_tree.h"
#include "patterns/halving_doubling.h"
#include "patterns/ring.h"
#include "reduce/kernels.h"

namespace conflux::hier {

using patterns::blockLen;
using patterns::blockLo;

size_t Combine::esize() const { return reduce::dataTypeSize(type); }

void Combine::reduce2(void* dst, const void* a, const void* b, size_t n, bool last) const {
  const void* srcs[2] = {a, b};
  reduceN(dst, srcs, 2, n, last);
}

void Combine::reduceN(void* dst, const void* const* srcs, int nsrc, size_t n, bool last) const {
  if (n == 0) return;
  reduce::reduce(dst, srcs, nsrc, n, type, last ? op : reduce::partialOp(op), last && op == cfxAvg ? divisor : 1);
}

void Combine::finish(void* buf, size_t n) const {
  if (op != cfxAvg || n == 0) return;
  const void* src[1] = {buf};
  reduce::reduce(buf, src, 1, n, type, cfxAvg, divisor);
}

namespace {

std::unique_ptr<Op> schedule(NetEnv env, const char* what, std::vector<Step> steps) {
  return std::make_unique<NetSchedule>(env, what, std::move(steps));
}

}  // namespace

// Ring: in reduce-scatter step s every member sends block rsSend(s) to the next member and
// folds the previous member's copy of block rsRecv(s) into its own; after m-1 steps it holds the
// full reduction of one block, which the all-gather then passes around the ring.
std::unique_ptr<Op> ringAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c,
                                  Scratch& s) {
  const int m = g.size(), i = g.me;
  const size_t es = c.esize();
  std::vector<Step> steps;
  if (i < 0) return schedule(env, "ring AllReduce", {});
  if (m == 1) {
    steps.push_back(Step{{}, [=] { c.finish(buf, count); }});
    return schedule(env, "ring AllReduce", std::move(steps));
  }
  patterns::Ring ring{m};
  const int next = g.members[ring.next(i)], prev = g.members[ring.prev(i)];
  std::byte* tmp = s.get(blockLen(count, m, m - 1) * es + es);
  for (int st = 0; st < m - 1; ++st) {
    int sb = ring.rsSend(i, st), rb = ring.rsRecv(i, st);
    std::byte* rptr = buf + blockLo(count, m, rb) * es;
    size_t rlen = blockLen(count, m, rb);
    Step step;
    step.xfers.push_back({next, true, buf + blockLo(count, m, sb) * es, blockLen(count, m, sb) * es});
    step.xfers.push_back({prev, false, tmp, rlen * es});
    bool last = st == m - 2;
    step.then = [=] { c.reduce2(rptr, rptr, tmp, rlen, last); };
    steps.push_back(std::move(step));
  }
  for (int st = 0; st < m - 1; ++st) {
    int sb = ring.agSend(i, st), rb = ring.agRecv(i, st);
    Step step;
    step.xfers.push_back({next, true, buf + blockLo(count, m, sb) * es, blockLen(count, m, sb) * es});
    step.xfers.push_back({prev, false, buf + blockLo(count, m, rb) * es, blockLen(count, m, rb) * es});
    steps.push_back(std::move(step));
  }
  return schedule(env, "ring AllReduce", std::move(steps));
}

// Double binary tree: half h of the buffer is reduced up tree h (children's partial results
// folded in child order) and the root's result broadcast back down. The trees run at once on
// separate channels, so a rank can be a parent in one and a child in the other.
std::unique_ptr<Op> treeAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c,
                                  Scratch& s) {
  auto par = std::make_unique<Parallel>();
  const int m = g.size(), i = g.me;
  if (i < 0) return par;
  const size_t es = c.esize();
  for (int t = 0; t < 2; ++t) {
    std::byte* half = buf + blockLo(count, 2, t) * es;
    const size_t n = blockLen(count, 2, t);
    const int channel = t == 0 ? net::kCollChannel : net::kTreeChannel;
    patterns::TreeNode node = patterns::doubleBinaryTree(m, i, t);
    std::vector<int> kids;
    for (int k : {node.child0, node.child1}) {
      if (k >= 0) kids.push_back(g.members[k]);
    }
    std::vector<Step> steps;
    // Up: children's partial sums, folded in after this member's own values.
    Step up;
    std::vector<const void*> srcs = {half};
    for (int k : kids) {
      std::byte* tmp = s.get(n * es);
      up.xfers.push_back({k, false, tmp, n * es, channel});
      srcs.push_back(tmp);
    }
    const bool root = node.parent < 0;
    up.then = [=] {
      if (srcs.size() > 1) c.reduceN(half, srcs.data(), static_cast<int>(srcs.size()), n, root);
      else if (root) c.finish(half, n);
    };
    steps.push_back(std::move(up));
    if (!root) {
      steps.push_back(Step{{{g.members[node.parent], true, half, n * es, channel}}, {}});
      steps.push_back(Step{{{g.members[node.parent], false, half, n * es, channel}}, {}});
    }
    // Down: the result to the children.
    Step down;
    for (int k : kids) down.xfers.push_back({k, true, half, n * es, channel});
    steps.push_back(std::move(down));
    par->add(schedule(env, t == 0 ? "tree AllReduce (tree 0)" : "tree AllReduce (tree 1)", std::move(steps)));
  }
  return par;
}

// Halving-doubling: fold the extra members in, halve the block range with partners at distance
// p/2, p/4, ..., 1 (reducing the kept half each time), double it back in the reverse order, and
// hand the result to the folded members.
std::unique_ptr<Op> hdAllReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c,
                                Scratch& s) {
  const int m = g.size(), i = g.me;
  std::vector<Step> steps;
  if (i < 0) return schedule(env, "rhd AllReduce", {});
  const size_t es = c.esize();
  patterns::HdPlan plan = patterns::halvingDoubling(m, i);
  const int p = plan.p;
  auto lo = [&](int b) { return blockLo(count, p, b); };
  auto range = [&](int a, int b) { return std::pair<std::byte*, size_t>(buf + lo(a) * es, lo(b) - lo(a)); };
  if (plan.foldPartner >= 0) {
    int partner = g.members[plan.foldPartner];
    if (plan.foldSender) {
      steps.push_back(Step{{{partner, true, buf, count * es}}, {}});
      steps.push_back(Step{{{partner, false, buf, count * es}}, {}});
      return schedule(env, "rhd AllReduce", std::move(steps));
    }
    std::byte* tmp = s.get(count * es);
    steps.push_back(Step{{{partner, false, tmp, count * es}}, [=] { c.reduce2(buf, tmp, buf, count); }});
  }
  std::byte* tmp = s.get((count / 2 + p + 1) * es);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const auto& st = plan.steps[k];
    auto [keep, keepN] = range(st.keepLo, st.keepHi);
    auto [send, sendN] = range(st.sendLo, st.sendHi);
    int partner = g.members[st.partner];
    bool last = k + 1 == plan.steps.size();
    steps.push_back(Step{{{partner, true, send, sendN * es}, {partner, false, tmp, keepN * es}},
                         [=] { c.reduce2(keep, keep, tmp, keepN, last); }});
  }
  if (plan.steps.empty()) steps.push_back(Step{{}, [=] { c.finish(buf, count); }});
  for (auto it = plan.steps.rbegin(); it != plan.steps.rend(); ++it) {
    auto [have, haveN] = range(it->keepLo, it->keepHi);
    auto [get, getN] = range(it->sendLo, it->sendHi);
    int partner = g.members[it->partner];
    steps.push_back(Step{{{partner, true, have, haveN * es}, {partner, false, get, getN * es}}, {}});
  }
  if (plan.foldPartner >= 0) steps.push_back(Step{{{g.members[plan.foldPartner], true, buf, count * es}}, {}});
  return schedule(env, "rhd AllReduce", std::move(steps));
}

std::unique_ptr<Op> ringAllGatherV(NetEnv env, const Group& g, const std::vector<std::byte*>& blockPtr,
                                   const std::vector<size_t>& blockBytes) {
  const int m = g.size(), i = g.me;
  std::vector<Step> steps;
  if (i < 0 || m == 1) return schedule(env, "ring AllGather", {});
  patterns::Ring ring{m};
  const int next = g.members[ring.next(i)], prev = g.members[ring.prev(i)];
  // Step s: pass on the block received in step s-1 (own block first).
  for (int st = 0; st < m - 1; ++st) {
    int sb = ((i - st) % m + m) % m, rb = ((i - st - 1) % m + m) % m;
    steps.push_back(Step{{{next, true, blockPtr[sb], blockBytes[sb]}, {prev, false, blockPtr[rb], blockBytes[rb]}}, {}});
  }
  return schedule(env, "ring AllGather", std::move(steps));
}

std::unique_ptr<Op> ringReduceScatter(NetEnv env, const Group& g, std::byte* input, const std::vector<size_t>& blockOff,
                                      const std::vector<size_t>& blockCount, std::byte* out, const Combine& c,
                                      Scratch& s) {
  const int m = g.size(), i = g.me;
  const size_t es = c.esize();
  std::vector<Step> steps;
  if (i < 0) return schedule(env, "ring ReduceScatter", {});
  if (m == 1) {
    steps.push_back(Step{{}, [=] {
      std::copy(input, input + blockCount[0] * es, out);
      c.finish(out, blockCount[0]);
    }});
    return schedule(env, "ring ReduceScatter", std::move(steps));
  }
  patterns::Ring ring{m};
  const int next = g.members[ring.next(i)], prev = g.members[ring.prev(i)];
  std::byte* tmp = s.get(*std::max_element(blockCount.begin(), blockCount.end()) * es);
  // The all-reduce ring shifted by one, so that member i ends with block i.
  const int j = (i + m - 1) % m;
  for (int st = 0; st < m - 1; ++st) {
    int sb = ring.rsSend(j, st), rb = ring.rsRecv(j, st);
    std::byte* rptr = input + blockOff[rb] * es;
    size_t rn = blockCount[rb];
    bool last = st == m - 2;
    steps.push_back(Step{{{next, true, input + blockOff[sb] * es, blockCount[sb] * es}, {prev, false, tmp, rn * es}},
                         [=] { c.reduce2(last ? out : rptr, rptr, tmp, rn, last); }});
  }
  return schedule(env, "ring ReduceScatter", std::move(steps));
}

std::unique_ptr<Op> chainBroadcast(NetEnv env, const Group& g, std::byte* buf, size_t bytes) {
  const int m = g.size(), i = g.me;
  std::vector<Step> steps;
  if (i < 0 || m == 1) return schedule(env, "chain Broadcast", {});
  // Pipelined in chunks: in step k a member receives chunk k and forwards chunk k-1.
  const size_t chunk = std::max<size_t>(256 << 10, (bytes + 15) / 16);
  const size_t nchunks = bytes == 0 ? 1 : ceilDiv(bytes, chunk);
  auto piece = [&](size_t k) {
    size_t off = k * chunk;
    return std::pair<std::byte*, size_t>(buf + off, std::min(chunk, bytes - std::min(off, bytes)));
  };
  const bool first = i == 0, last = i == m - 1;
  for (size_t k = 0; k <= nchunks; ++k) {
    Step st;
    if (!first && k < nchunks) {
      auto [p, n] = piece(k);
      st.xfers.push_back({g.members[i - 1], false, p, n});
    }
    if (!last) {
      // The first member sends chunk k at once; the others forward what they got a step ago.
      size_t sendK = first ? k : k - 1;
      if ((first && k < nchunks) || (!first && k >= 1)) {
        auto [p, n] = piece(sendK);
        st.xfers.push_back({g.members[i + 1], true, p, n});
      }
    }
    if (!st.xfers.empty()) steps.push_back(std::move(st));
  }
  return schedule(env, "chain Broadcast", std::move(steps));
}

std::unique_ptr<Op> binomialReduce(NetEnv env, const Group& g, std::byte* buf, size_t count, const Combine& c,
                                   Scratch& s) {
  const int m = g.size(), v = g.me;
  std::vector<Step> steps;
  if (v < 0) return schedule(env, "binomial Reduce", {});
  const size_t es = c.esize();
  // Children v + 1, v + 2, v + 4, ... below v's lowest set bit, folded in that order.
  int lastChild = -1;
  for (int mask = 1; mask < m && (v & mask) == 0; mask <<= 1) {
    if (v + mask < m) lastChild = v + mask;
  }
  for (int mask = 1; mask < m; mask <<= 1) {
    if ((v & mask) != 0) {
      steps.push_back(Step{{{g.members[v - mask], true, buf, count * es}}, {}});
      return schedule(env, "binomial Reduce", std::move(steps));
    }
    if (v + mask < m) {
      std::byte* tmp = s.get(count * es);
      bool last = v == 0 && v + mask == lastChild;
      steps.push_back(
          Step{{{g.members[v + mask], false, tmp, count * es}}, [=] { c.reduce2(buf, buf, tmp, count, last); }});
    }
  }
  if (lastChild < 0) steps.push_back(Step{{}, [=] { c.finish(buf, count); }});
  return schedule(env, "binomial Reduce", std::move(steps));
}

}  // namespace conflux::hier
