#include "vector_coll_cases.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "pattern.h"

namespace cfxtest {

namespace {

constexpr uint8_t kGuard = 0xA5;
constexpr size_t kGuardElems = 16;

// splitmix64: the same numbers on every rank for the same seed.
struct Draw {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : next() % n; }
};

// Uneven counts: about a third zeros, the rest up to `most`; one large count where `large` is set.
// `nearlyEven`: every count within 10% below `most`, no zeros (across hosts, AllGatherv and
// ReduceScatterv then take the padded hierarchical path: vector_coll.h).
struct CountSet {
  size_t most;
  bool large;
  bool nearlyEven = false;
};
constexpr CountSet kCountSets[] = {{0, false}, {7, false}, {1031, false}, {64, true}, {3000, false, true}};

size_t drawCount(Draw& d, const CountSet& cs) {
  if (cs.nearlyEven) return cs.most - d.below(cs.most / 10);
  if (cs.most == 0 || d.below(3) == 0) return 0;
  return 1 + d.below(cs.most);
}

// counts[i][j]: what rank i sends to rank j.
std::vector<std::vector<size_t>> countMatrix(int n, uint64_t seed, const CountSet& cs) {
  Draw d{seed};
  std::vector<std::vector<size_t>> c(n, std::vector<size_t>(n));
  for (auto& row : c) {
    for (auto& x : row) x = drawCount(d, cs);
  }
  if (cs.large) c[n - 1][0] = 100003;
  return c;
}

// Displacements for `counts`: the blocks in a shuffled order with gaps of 0-3 elements. Returns the
// extent in elements (the last gap included).
size_t layout(const std::vector<size_t>& counts, uint64_t seed, std::vector<size_t>& displs) {
  Draw d{seed};
  std::vector<int> order(counts.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[d.below(i)]);
  displs.assign(counts.size(), 0);
  size_t pos = 0;
  for (int r : order) {
    pos += d.below(4);
    displs[r] = pos;
    pos += counts[r];
  }
  return pos + d.below(4);
}

// What a block of rank r's input for rank `to` holds: the pattern from an index that names both.
size_t firstIndex(int r, int to, int n) { return (static_cast<size_t>(r) * n + to) * 131 % Pattern::kPeriod; }

std::string label(const char* coll, cfxDataType_t t, size_t set, const Rank& rk) {
  return std::string(coll) + " " + typeName(t) + " count set " + std::to_string(set) + " nranks " +
         std::to_string(rk.nranks) + " rank " + std::to_string(rk.rank) + ": ";
}

std::string failed(const std::string& what, cfxResult_t r, cfxComm_t comm) {
  return what + "returned " + cfxGetErrorString(r) + ": " + cfxGetLastError(comm);
}

// Elements outside every block (gaps and the tail guard) must still hold the guard byte.
std::string checkGuards(const std::vector<uint8_t>& buf, const std::vector<size_t>& counts,
                        const std::vector<size_t>& displs, size_t es, const std::string& what) {
  std::vector<char> inBlock(buf.size() / es, 0);
  for (size_t r = 0; r < counts.size(); ++r) std::fill_n(inBlock.begin() + displs[r], counts[r], 1);
  for (size_t e = 0; e < inBlock.size(); ++e) {
    if (inBlock[e]) continue;
    for (size_t b = 0; b < es; ++b) {
      if (buf[e * es + b] != kGuard) return what + "element " + std::to_string(e) + " outside every block was written";
    }
  }
  return "";
}

// The call's result, after its stream (if any) has finished it: "" or what failed.
std::string completed(cfxResult_t r, cfxStream_t stream, cfxComm_t comm, const std::string& what) {
  if (r == cfxSuccess && stream != nullptr) r = cfxStreamSynchronize(stream);
  return r == cfxSuccess ? "" : failed(what, r, comm);
}

// Rank i's block at displs[i] must hold rank i's pattern from first(i); nothing else may be written.
template <class First>
std::string checkBlocks(const Pattern& pat, const std::vector<uint8_t>& recv, const std::vector<size_t>& counts,
                        const std::vector<size_t>& displs, First first, const std::string& what) {
  const size_t es = pat.elemSize();
  std::vector<uint8_t> want;
  for (size_t i = 0; i < counts.size(); ++i) {
    want.resize(counts[i] * es);
    pat.fillInput(static_cast<int>(i), first(static_cast<int>(i)), counts[i], want.data());
    std::string e = compare(recv.data() + displs[i] * es, want.data(), counts[i], pat.type(),
                            what + "block of rank " + std::to_string(i));
    if (!e.empty()) return e;
  }
  return checkGuards(recv, counts, displs, es, what);
}

std::string runAlltoAllv(const Rank& rk, cfxComm_t comm, cfxDataType_t t, size_t set, cfxStream_t stream) {
  const int n = rk.nranks, me = rk.rank;
  const Pattern pat(t, cfxSum, n);
  const size_t es = pat.elemSize();
  const auto c = countMatrix(n, 1000 + set * 17 + t, kCountSets[set]);
  std::vector<size_t> sc(n), rc(n), sd, rd;
  for (int j = 0; j < n; ++j) sc[j] = c[me][j], rc[j] = c[j][me];
  const size_t sExt = layout(sc, 7 * me + set, sd), rExt = layout(rc, 11 * me + set + 3, rd) + kGuardElems;
  std::vector<uint8_t> send(sExt * es, 0x5A), recv(rExt * es, kGuard);
  for (int j = 0; j < n; ++j) pat.fillInput(me, firstIndex(me, j, n), sc[j], send.data() + sd[j] * es);
  const std::string what = label("AlltoAllv", t, set, rk);
  cfxResult_t r = cfxAlltoAllv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), t, comm, stream);
  if (std::string e = completed(r, stream, comm, what); !e.empty()) return e;
  return checkBlocks(pat, recv, rc, rd, [&](int i) { return firstIndex(i, me, n); }, what);
}

std::string runAllGatherv(const Rank& rk, cfxComm_t comm, cfxDataType_t t, size_t set, bool inPlace,
                          cfxStream_t stream) {
  const int n = rk.nranks, me = rk.rank;
  const Pattern pat(t, cfxSum, n);
  const size_t es = pat.elemSize();
  const auto c = countMatrix(n, 2000 + set * 17 + t, kCountSets[set]);
  std::vector<size_t> counts(n), displs;
  for (int r = 0; r < n; ++r) counts[r] = c[r][(r + 1) % n];
  const size_t ext = layout(counts, 5 + set + t, displs) + kGuardElems;  // the same on every rank
  std::vector<uint8_t> recv(ext * es, kGuard), own(counts[me] * es);
  pat.fillInput(me, firstIndex(me, me, n), counts[me], own.data());
  const void* sendbuff = own.data();
  if (inPlace) {
    if (!own.empty()) std::memcpy(recv.data() + displs[me] * es, own.data(), own.size());
    sendbuff = recv.data() + displs[me] * es;
  }
  const std::string what = label(inPlace ? "AllGatherv in place" : "AllGatherv", t, set, rk);
  cfxResult_t r = cfxAllGatherv(sendbuff, counts[me], recv.data(), counts.data(), displs.data(), t, comm, stream);
  if (std::string e = completed(r, stream, comm, what); !e.empty()) return e;
  return checkBlocks(pat, recv, counts, displs, [&](int i) { return firstIndex(i, i, n); }, what);
}

std::string runReduceScatterv(const Rank& rk, cfxComm_t comm, cfxDataType_t t, cfxRedOp_t op, size_t set,
                              bool inPlace, cfxStream_t stream) {
  const int n = rk.nranks, me = rk.rank;
  const Pattern pat(t, op, n);
  const size_t es = pat.elemSize();
  const auto c = countMatrix(n, 3000 + set * 17 + t, kCountSets[set]);
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = c[(r + 1) % n][r];
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t offset = std::accumulate(counts.begin(), counts.begin() + me, size_t{0});
  std::vector<uint8_t> send((total + kGuardElems) * es, kGuard), recv((counts[me] + kGuardElems) * es, kGuard);
  pat.fillInput(me, 0, total, send.data());
  void* recvbuff = inPlace ? send.data() + offset * es : recv.data();
  const std::string what = label(inPlace ? "ReduceScatterv in place" : "ReduceScatterv", t, set, rk) + opName(op) + ": ";
  cfxResult_t r = cfxReduceScatterv(send.data(), recvbuff, counts.data(), t, op, comm, stream);
  if (std::string e = completed(r, stream, comm, what); !e.empty()) return e;
  std::vector<uint8_t> want(counts[me] * es);
  pat.fillExpected(offset, counts[me], want.data());
  std::string e = compare(static_cast<uint8_t*>(recvbuff), want.data(), counts[me], t, what);
  if (!e.empty()) return e;
  const uint8_t* tail = inPlace ? send.data() + total * es : recv.data() + counts[me] * es;
  for (size_t b = 0; b < kGuardElems * es; ++b) {
    if (tail[b] != kGuard) return what + "wrote past its output";
  }
  return "";
}

// A fresh communicator for a case that leaves its communicator failed.
cfxComm_t fresh(const Rank& rk) {
  cfxComm_t comm = nullptr;
  if (cfxCommSplit(rk.comm, 0, rk.rank, &comm, nullptr) != cfxSuccess) return nullptr;
  return comm;
}

std::string expectUsage(cfxResult_t r, cfxComm_t comm, const std::vector<std::string>& words, const std::string& what) {
  const std::string msg = cfxGetLastError(comm);
  if (r != cfxInvalidUsage) return what + ": returned " + cfxGetErrorString(r) + " instead of invalid usage: " + msg;
  for (const auto& w : words) {
    if (msg.find(w) == std::string::npos) return what + ": the error does not say '" + w + "': " + msg;
  }
  return "";
}

bool untouched(const std::vector<uint8_t>& buf) {
  return std::all_of(buf.begin(), buf.end(), [](uint8_t b) { return b == kGuard; });
}

// The nearly even set only where it takes a path of its own: across hosts (AllGatherv and
// ReduceScatterv; AlltoAllv has no padded path).
bool runsSet(const Rank& rk, size_t set, bool padded) {
  if (!kCountSets[set].nearlyEven) return true;
  int host = 0, nhosts = 1;
  cfxCommHost(rk.comm, &host, &nhosts);
  return padded && nhosts > 1;
}

}  // namespace

std::string alltoallvMatrix(const Rank& rk) {
  for (int t = 0; t < cfxNumTypes; ++t) {
    for (size_t set = 0; set < std::size(kCountSets); ++set) {
      if (!runsSet(rk, set, false)) continue;
      if (std::string e = runAlltoAllv(rk, rk.comm, static_cast<cfxDataType_t>(t), set, nullptr); !e.empty()) return e;
    }
  }
  return "";
}

std::string allgathervMatrix(const Rank& rk) {
  for (int t = 0; t < cfxNumTypes; ++t) {
    for (size_t set = 0; set < std::size(kCountSets); ++set) {
      if (!runsSet(rk, set, true)) continue;
      for (bool inPlace : {false, true}) {
        std::string e = runAllGatherv(rk, rk.comm, static_cast<cfxDataType_t>(t), set, inPlace, nullptr);
        if (!e.empty()) return e;
      }
    }
  }
  return "";
}

std::string reducescattervMatrix(const Rank& rk) {
  for (int t = 0; t < cfxNumTypes; ++t) {
    for (int op = 0; op < cfxNumOps; ++op) {
      for (size_t set = 0; set < std::size(kCountSets); ++set) {
        if (!runsSet(rk, set, true)) continue;
        for (bool inPlace : {false, true}) {
          std::string e = runReduceScatterv(rk, rk.comm, static_cast<cfxDataType_t>(t), static_cast<cfxRedOp_t>(op),
                                            set, inPlace, nullptr);
          if (!e.empty()) return e;
        }
      }
    }
  }
  return "";
}

std::string streamAndGroupCases(const Rank& rk) {
  cfxStream_t stream = nullptr;
  if (cfxStreamCreate(&stream) != cfxSuccess) return "no stream";
  std::string e = runAlltoAllv(rk, rk.comm, cfxFloat32, 2, stream);
  if (e.empty()) e = runAllGatherv(rk, rk.comm, cfxBfloat16, 3, true, stream);
  if (e.empty()) e = runReduceScatterv(rk, rk.comm, cfxInt32, cfxSum, 2, false, stream);
  if (e.empty() && rk.nranks > 1) {
    // Stream order: the AllGatherv reads what the Recv before it on the stream wrote.
    const int n = rk.nranks, me = rk.rank;
    int32_t token = 100 + me, in = -1;
    std::vector<int32_t> out(n, -1);
    std::vector<size_t> ones(n, 1), at(n);
    std::iota(at.begin(), at.end(), size_t{0});
    cfxGroupStart();
    cfxSend(&token, 1, cfxInt32, (me + 1) % n, rk.comm, stream);
    cfxRecv(&in, 1, cfxInt32, (me + n - 1) % n, rk.comm, stream);
    cfxGroupEnd();
    cfxResult_t r = cfxAllGatherv(&in, 1, out.data(), ones.data(), at.data(), cfxInt32, rk.comm, stream);
    if (r == cfxSuccess) r = cfxStreamSynchronize(stream);
    if (r != cfxSuccess) e = failed("AllGatherv after a Recv: ", r, rk.comm);
    for (int q = 0; q < n && e.empty(); ++q) {
      if (out[q] != 100 + (q + n - 1) % n) e = "AllGatherv after a Recv: block " + std::to_string(q) + " holds " + std::to_string(out[q]);
    }
  }
  cfxStreamDestroy(stream);
  if (!e.empty()) return "on a stream: " + e;

  // In one group: a ReduceScatterv, a ring of Send/Recv, and an AllGatherv.
  const int n = rk.nranks, me = rk.rank;
  std::vector<size_t> counts(n);
  for (int r = 0; r < n; ++r) counts[r] = (r * 5 + 3) % 7;  // zeros included
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t offset = std::accumulate(counts.begin(), counts.begin() + me, size_t{0});
  std::vector<int32_t> rsIn(total), rsOut(counts[me], -1), agOut(total, -1), agIn(counts[me]);
  for (size_t i = 0; i < total; ++i) rsIn[i] = static_cast<int32_t>(i * 10 + me);
  for (size_t i = 0; i < counts[me]; ++i) agIn[i] = static_cast<int32_t>(1000 * me + i);
  std::vector<size_t> displs(n);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), size_t{0});
  int32_t token = me, got = -1;
  cfxGroupStart();
  cfxReduceScatterv(rsIn.data(), rsOut.data(), counts.data(), cfxInt32, cfxSum, rk.comm, nullptr);
  if (n > 1) {
    cfxSend(&token, 1, cfxInt32, (me + 1) % n, rk.comm, nullptr);
    cfxRecv(&got, 1, cfxInt32, (me + n - 1) % n, rk.comm, nullptr);
  }
  cfxAllGatherv(agIn.data(), counts[me], agOut.data(), counts.data(), displs.data(), cfxInt32, rk.comm, nullptr);
  if (cfxResult_t r = cfxGroupEnd(); r != cfxSuccess) return failed("in a group: ", r, rk.comm);
  const int32_t sumRanks = n * (n - 1) / 2;
  for (size_t i = 0; i < counts[me]; ++i) {
    if (rsOut[i] != static_cast<int32_t>((offset + i) * 10 * n + sumRanks)) return "in a group: ReduceScatterv element " + std::to_string(i);
  }
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < counts[r]; ++i) {
      if (agOut[displs[r] + i] != static_cast<int32_t>(1000 * r + i)) return "in a group: AllGatherv block of rank " + std::to_string(r);
    }
  }
  if (n > 1 && got != (me + n - 1) % n) return "in a group: the Recv got " + std::to_string(got);
  return "";
}

std::string mismatchCases(const Rank& rk) {
  const int n = rk.nranks, me = rk.rank;
  std::vector<size_t> counts(n, 3), displs(n);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), size_t{0});
  std::vector<float> in(3 * n, 1.0f);
  // AlltoAllv: the last rank expects one element more from rank 0 than rank 0 sends it.
  {
    cfxComm_t comm = fresh(rk);
    if (comm == nullptr) return "split failed";
    std::vector<size_t> rc = counts;
    if (me == n - 1) rc[0] = 4;
    std::vector<uint8_t> out(4 * (3 * n + 1), kGuard);
    std::vector<size_t> rd = displs;
    cfxResult_t r = cfxAlltoAllv(in.data(), counts.data(), displs.data(), out.data(), rc.data(), rd.data(), cfxFloat32, comm, nullptr);
    std::string e = expectUsage(r, comm, {"AlltoAllv count mismatch", "rank 0 sends 3", "rank " + std::to_string(n - 1), "expects 4"},
                                "AlltoAllv counts");
    if (e.empty() && !untouched(out)) e = "AlltoAllv counts: the output was written";
    cfxCommDestroy(comm);
    if (!e.empty()) return e;
  }
  // ReduceScatterv: rank 0 believes rank 1's block is longer.
  {
    cfxComm_t comm = fresh(rk);
    if (comm == nullptr) return "split failed";
    std::vector<size_t> rc = counts;
    if (me == 0) rc[1] = 2;
    std::vector<uint8_t> out(4 * 3, kGuard);
    cfxResult_t r = cfxReduceScatterv(in.data(), out.data(), rc.data(), cfxFloat32, cfxSum, comm, nullptr);
    std::string e = expectUsage(r, comm, {"ReduceScatterv count mismatch", "rank 0 has recvcounts[1] = 2", "rank 1 has recvcounts[1] = 3"},
                                "ReduceScatterv counts");
    if (e.empty() && !untouched(out)) e = "ReduceScatterv counts: the output was written";
    cfxCommDestroy(comm);
    if (!e.empty()) return e;
  }
  // Rank 0 calls AllGatherv, the others ReduceScatterv.
  {
    cfxComm_t comm = fresh(rk);
    if (comm == nullptr) return "split failed";
    std::vector<uint8_t> out(4 * 3 * n, kGuard);
    cfxResult_t r = me == 0 ? cfxAllGatherv(in.data(), 3, out.data(), counts.data(), displs.data(), cfxFloat32, comm, nullptr)
                            : cfxReduceScatterv(in.data(), out.data(), counts.data(), cfxFloat32, cfxSum, comm, nullptr);
    std::string e = expectUsage(r, comm, {"collective mismatch", "rank 0 called AllGatherv(float", "rank 1 called ReduceScatterv(float"},
                                "different v-collectives");
    if (e.empty() && !untouched(out)) e = "different v-collectives: the output was written";
    cfxCommDestroy(comm);
    if (!e.empty()) return e;
  }
  // On one host, rank 0 calls AlltoAllv, the others AllGather: of 2 elements (the latency path) and
  // of 2^17 (staged). Every rank fails naming both calls. (Across hosts the check is an AllGather
  // of the counts, named as such; against a large AllGather the rank alone on its host then waits
  // out CFX_TIMEOUT for its step.)
  int host = 0, nhosts = 1;
  cfxCommHost(rk.comm, &host, &nhosts);
  if (nhosts > 1) return "";
  for (size_t count : {size_t{2}, size_t{1} << 17}) {
    cfxComm_t comm = fresh(rk);
    if (comm == nullptr) return "split failed";
    std::vector<float> gin(count, 2.0f);
    std::vector<uint8_t> out(4 * count * n, kGuard);
    cfxResult_t r = me == 0 ? cfxAlltoAllv(in.data(), counts.data(), displs.data(), out.data(), counts.data(), displs.data(), cfxFloat32, comm, nullptr)
                            : cfxAllGather(gin.data(), out.data(), count, cfxFloat32, comm, nullptr);
    const std::string what = "AlltoAllv against AllGather of " + std::to_string(count);
    std::string e = expectUsage(r, comm, {"collective mismatch", "AlltoAllv", "AllGather #"}, what);
    if (e.empty() && me == 0 && !untouched(out)) e = what + ": the output was written";
    cfxCommDestroy(comm);
    if (!e.empty()) return e;
  }
  return "";
}

std::string invalidArgumentCases(const Rank& rk) {
  const int n = rk.nranks, me = rk.rank;
  std::vector<size_t> counts(n, 2), displs(n);
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), size_t{0});
  std::vector<uint8_t> in(4 * 2 * n, 1), out(4 * 2 * n, kGuard);
  auto expectInvalid = [&](cfxResult_t r, const std::string& word, const std::string& what) -> std::string {
    const std::string msg = cfxGetLastError(rk.comm);
    if (r != cfxInvalidArgument) return what + ": returned " + cfxGetErrorString(r) + ": " + msg;
    if (msg.find(word) == std::string::npos) return what + ": the error does not say '" + word + "': " + msg;
    if (!untouched(out)) return what + ": the output was written";
    return "";
  };
  std::string e = expectInvalid(cfxAlltoAllv(in.data(), nullptr, displs.data(), out.data(), counts.data(), displs.data(),
                                             cfxFloat32, rk.comm, nullptr),
                                "sendcounts is NULL", "NULL sendcounts");
  if (e.empty()) {
    e = expectInvalid(cfxAlltoAllv(out.data() + 4, counts.data(), displs.data(), out.data(), counts.data(),
                                   displs.data(), cfxFloat32, rk.comm, nullptr),
                      "overlap", "overlapping AlltoAllv");
  }
  if (e.empty()) {
    e = expectInvalid(cfxAllGatherv(in.data(), 3, out.data(), counts.data(), displs.data(), cfxFloat32, rk.comm, nullptr),
                      "sendcount 3 differs from recvcounts[" + std::to_string(me) + "] = 2", "AllGatherv sendcount");
  }
  if (e.empty()) {
    e = expectInvalid(cfxReduceScatterv(in.data(), out.data(), counts.data(), cfxFloat32, static_cast<cfxRedOp_t>(cfxNumOps),
                                        rk.comm, nullptr),
                      "invalid reduction op", "ReduceScatterv op");
  }
  if (e.empty()) {
    e = expectInvalid(cfxReduceScatterv(in.data(), out.data(), counts.data(), static_cast<cfxDataType_t>(cfxNumTypes),
                                        cfxSum, rk.comm, nullptr),
                      "datatype", "ReduceScatterv datatype");
  }
  if (!e.empty()) return e;
  // The communicator still works.
  return runAllGatherv(rk, rk.comm, cfxFloat32, 2, false, nullptr);
}

}  // namespace cfxtest
