// SBP boxing over real ranks: every ordered pair of layouts (Split(0), Split(1), Broadcast,
// PartialSum, PartialMax, PartialMin) on 1-D meshes of 1 to 4 ranks and on a 2x2 mesh (every pair
// of two-axis signatures), for even, uneven, tiny (ranks with empty parts) and 3-D shapes, in
// float32, int32 and bfloat16. Each rank's input is made from one logical tensor of exact values
// (partial layouts as shares that combine back exactly); the outputs of all ranks are put back
// together by the target signature, which must give the logical tensor bit for bit (Broadcast
// parts must agree). The plan and its cost are checked on their own, as are bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "conflux/train/sbp.h"
#include "harness.h"

namespace cfxtest {
namespace {

namespace sbp = conflux::train::sbp;
using sbp::Layout;
using sbp::Shape;
using sbp::Signature;
using conflux::train::Error;

const std::vector<Layout> kLayouts = {Layout::split(0),  Layout::split(1),      Layout::broadcast(),
                                      Layout::partialSum(), Layout::partialMax(), Layout::partialMin()};

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major index of `idx` in `s`.
int64_t flat(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

std::vector<int64_t> unflat(const Shape& s, int64_t f) {
  std::vector<int64_t> idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] == 0 ? 0 : f % s[d];
    f = s[d] == 0 ? 0 : f / s[d];
  }
  return idx;
}

// A tensor of doubles with its shape: the test's own arithmetic, independent of the library's.
struct T {
  Shape shape;
  std::vector<double> v;
};

// Part `c` of `n` of dimension d: the first L % n parts get one more row.
int64_t partBegin(int64_t len, int n, int c) { return c * (len / n) + std::min<int64_t>(c, len % n); }
int64_t partSize(int64_t len, int n, int c) { return len / n + (c < len % n ? 1 : 0); }

// Rank c's share of `t` under layout l on an axis of n ranks (salt varies the shares by axis).
T distribute(const T& t, const Layout& l, int n, int c, int salt) {
  T out{t.shape, {}};
  if (l.isSplit()) {
    out.shape[l.dim] = partSize(t.shape[l.dim], n, c);
    out.v.resize(count(out.shape));
    const int64_t begin = partBegin(t.shape[l.dim], n, c);
    for (int64_t i = 0; i < count(out.shape); ++i) {
      auto idx = unflat(out.shape, i);
      idx[l.dim] += begin;
      out.v[i] = t.v[flat(t.shape, idx)];
    }
    return out;
  }
  out.v = t.v;
  for (int64_t i = 0; i < count(t.shape); ++i) {
    const double x = t.v[i];
    const double g = static_cast<double>((i + 3 * c + salt) % 5) - 2;  // in [-2, 2]
    switch (l.kind) {
      case Layout::Kind::kPartialSum: {
        double others = 0;
        for (int k = 1; k < n; ++k) others += static_cast<double>((i + 3 * k + salt) % 5) - 2;
        out.v[i] = c == 0 ? x - others : g;
        break;
      }
      case Layout::Kind::kPartialMax: out.v[i] = (i + salt) % n == c ? x : x - 1 - (i + c) % 3; break;
      case Layout::Kind::kPartialMin: out.v[i] = (i + salt) % n == c ? x : x + 1 + (i + c) % 3; break;
      default: break;
    }
  }
  return out;
}

// Combines the tensors of an axis' ranks (in coordinate order) by its layout; false if
// Broadcast parts differ.
bool combine(const std::vector<T>& parts, const Layout& l, T& out) {
  if (l.isSplit()) {
    out.shape = parts[0].shape;
    out.shape[l.dim] = 0;
    for (const T& p : parts) out.shape[l.dim] += p.shape[l.dim];
    out.v.assign(count(out.shape), 0);
    int64_t begin = 0;
    for (const T& p : parts) {
      for (int64_t i = 0; i < count(p.shape); ++i) {
        auto idx = unflat(p.shape, i);
        idx[l.dim] += begin;
        out.v[flat(out.shape, idx)] = p.v[i];
      }
      begin += p.shape[l.dim];
    }
    return true;
  }
  out = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) {
    for (size_t i = 0; i < out.v.size(); ++i) {
      const double x = parts[k].v[i];
      switch (l.kind) {
        case Layout::Kind::kBroadcast:
          if (x != out.v[i]) return false;
          break;
        case Layout::Kind::kPartialSum: out.v[i] += x; break;
        case Layout::Kind::kPartialMax: out.v[i] = std::max(out.v[i], x); break;
        case Layout::Kind::kPartialMin: out.v[i] = std::min(out.v[i], x); break;
        default: break;
      }
    }
  }
  return true;
}

std::vector<int> coordsOf(int rank, const std::vector<int>& mesh) {
  std::vector<int> c(mesh.size());
  for (int k = static_cast<int>(mesh.size()) - 1; k >= 0; --k) {
    c[k] = rank % mesh[k];
    rank /= mesh[k];
  }
  return c;
}

// This rank's local tensor of `logical` under `sig`.
T localOf(const T& logical, const Signature& sig, const std::vector<int>& mesh, const std::vector<int>& coords) {
  T t = logical;
  for (size_t k = 0; k < sig.size(); ++k) t = distribute(t, sig[k], mesh[k], coords[k], static_cast<int>(k) * 2);
  return t;
}

// Puts every rank's local tensor (by rank) back together under `sig`, innermost axis first.
bool assemble(const std::vector<T>& locals, const Signature& sig, const std::vector<int>& mesh, T& out) {
  std::map<std::vector<int>, T> level;
  for (size_t r = 0; r < locals.size(); ++r) level[coordsOf(static_cast<int>(r), mesh)] = locals[r];
  for (int k = static_cast<int>(mesh.size()) - 1; k >= 0; --k) {
    std::map<std::vector<int>, std::vector<T>> groups;
    for (auto& [coords, t] : level) {
      std::vector<int> prefix(coords.begin(), coords.begin() + k);
      groups[prefix].push_back(t);  // std::map iterates coordinates in order
    }
    std::map<std::vector<int>, T> next;
    for (auto& [prefix, parts] : groups) {
      if (!combine(parts, sig[k], next[prefix])) return false;
    }
    level = std::move(next);
  }
  out = level.begin()->second;
  return true;
}

// Element storage in the datatypes under test (all values are small integers, exact in each).
void store(std::vector<std::byte>& buf, const T& t, cfxDataType_t dtype) {
  const size_t es = conflux::train::dtypeBytes(dtype);
  buf.assign(std::max<size_t>(1, t.v.size() * es), std::byte{0});
  for (size_t i = 0; i < t.v.size(); ++i) {
    if (dtype == cfxFloat32) {
      float f = static_cast<float>(t.v[i]);
      std::memcpy(buf.data() + i * es, &f, es);
    } else if (dtype == cfxInt32) {
      int32_t x = static_cast<int32_t>(t.v[i]);
      std::memcpy(buf.data() + i * es, &x, es);
    } else {  // bfloat16: the top half of the float (exact for these values)
      float f = static_cast<float>(t.v[i]);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t h = static_cast<uint16_t>(bits >> 16);
      std::memcpy(buf.data() + i * es, &h, es);
    }
  }
}

double load(const std::byte* p, int64_t i, cfxDataType_t dtype) {
  if (dtype == cfxFloat32) {
    float f;
    std::memcpy(&f, p + i * 4, 4);
    return f;
  }
  if (dtype == cfxInt32) {
    int32_t x;
    std::memcpy(&x, p + i * 4, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, p + i * 2, 2);
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

T logicalTensor(const Shape& s) {
  T t{s, std::vector<double>(count(s))};
  for (int64_t i = 0; i < count(s); ++i) t.v[i] = static_cast<double>((i * 7 + 3) % 11) - 5;
  return t;
}

// Every rank's output, gathered over `comm` as doubles (padded to the logical size).
std::vector<T> gatherOutputs(Rank& rk, const T& mine, int64_t pad) {
  std::vector<double> send(std::max<int64_t>(1, pad), 0.0), all(send.size() * rk.nranks);
  std::copy(mine.v.begin(), mine.v.end(), send.begin());
  EXPECT_EQ(cfxAllGather(send.data(), all.data(), send.size(), cfxFloat64, rk.comm, nullptr), cfxSuccess);
  std::vector<T> out(rk.nranks);
  for (int r = 0; r < rk.nranks; ++r) {
    out[r].v.assign(all.begin() + r * send.size(), all.begin() + (r + 1) * send.size());
  }
  return out;
}

// Converts `from` -> `to` and checks the result; returns "" or what went wrong.
std::string check(Rank& rk, const sbp::Placement& pl, const Shape& shape, const Signature& from, const Signature& to,
                  cfxDataType_t dtype) {
  const std::vector<int>& mesh = pl.mesh();
  const T logical = logicalTensor(shape);
  const T in = localOf(logical, from, mesh, pl.coords());
  std::vector<std::byte> inBuf, outBuf;
  store(inBuf, in, dtype);
  const Shape outShape = sbp::localShape(shape, to, mesh, pl.coords());
  outBuf.assign(std::max<size_t>(1, count(outShape) * conflux::train::dtypeBytes(dtype)), std::byte{0x5a});
  sbp::boxing(pl, inBuf.data(), from, outBuf.data(), to, shape, dtype);
  T out{outShape, std::vector<double>(count(outShape))};
  for (int64_t i = 0; i < count(outShape); ++i) out.v[i] = load(outBuf.data(), i, dtype);
  // Outputs have rank-dependent sizes: gather padded, then trim each by its own local shape.
  std::vector<T> all = gatherOutputs(rk, out, count(shape));
  for (int r = 0; r < rk.nranks; ++r) {
    all[r].shape = sbp::localShape(shape, to, mesh, coordsOf(r, mesh));
    all[r].v.resize(count(all[r].shape));
  }
  T back;
  std::string what = sbp::toString(from) + " -> " + sbp::toString(to) + " dtype " + std::to_string(dtype) + " shape [";
  for (int64_t d : shape) what += std::to_string(d) + " ";
  what += "]";
  if (!assemble(all, to, mesh, back)) return what + ": Broadcast parts differ";
  if (back.shape != logical.shape || back.v != logical.v) return what + ": wrong values";
  return "";
}

const std::vector<Shape> kShapes = {{8, 12}, {7, 5}, {3, 2}, {5, 6, 3}};

void everyPair1d(int n) {
  runRanks(n, [n](Rank& rk) {
    sbp::Placement pl(rk.comm, {n});
    for (cfxDataType_t dtype : {cfxFloat32, cfxInt32, cfxBfloat16}) {
      for (const Shape& shape : kShapes) {
        for (const Layout& a : kLayouts) {
          for (const Layout& b : kLayouts) {
            std::string bad = check(rk, pl, shape, {a}, {b}, dtype);
            ASSERT_EQ(bad, "");
          }
        }
      }
    }
  });
}

TEST(SbpBoxing, EveryPairOneRank) { everyPair1d(1); }
TEST(SbpBoxing, EveryPairTwoRanks) { everyPair1d(2); }
TEST(SbpBoxing, EveryPairThreeRanks) { everyPair1d(3); }
TEST(SbpBoxing, EveryPairFourRanks) { everyPair1d(4); }

// Every pair of two-axis signatures on a 2x2 mesh (36 x 36), float32 on every shape; the
// partial layouts in int32 and bfloat16 on the uneven shape.
TEST(SbpBoxing, EveryPairOn2x2Mesh) {
  runRanks(4, [](Rank& rk) {
    sbp::Placement pl(rk.comm, {2, 2});
    std::vector<Signature> sigs;
    for (const Layout& a : kLayouts) {
      for (const Layout& b : kLayouts) sigs.push_back({a, b});
    }
    for (const Shape& shape : kShapes) {
      for (const Signature& from : sigs) {
        for (const Signature& to : sigs) ASSERT_EQ(check(rk, pl, shape, from, to, cfxFloat32), "");
      }
    }
    for (cfxDataType_t dtype : {cfxInt32, cfxBfloat16}) {
      for (const Signature& from : sigs) {
        for (const Signature& to : sigs) {
          if (from[0].isPartial() || from[1].isPartial() || to[0].isPartial() || to[1].isPartial()) {
            ASSERT_EQ(check(rk, pl, {7, 5}, from, to, dtype), "");
          }
        }
      }
    }
  });
}

// What the documented conversions leave on each rank: B -> P keeps the tensor on coordinate 0 and
// zeros elsewhere; S -> Pmax fills the rest with the lowest value; P -> Pmax reduces each part.
TEST(SbpBoxing, LocalConversionsAsDocumented) {
  runRanks(2, [](Rank& rk) {
    sbp::Placement pl(rk.comm, {2});
    std::vector<float> in = {1, 2, 3, 4}, out(4, 9.0f);
    sbp::boxing(pl, in.data(), {Layout::broadcast()}, out.data(), {Layout::partialSum()}, {4}, cfxFloat32);
    EXPECT_EQ(out, rk.rank == 0 ? in : std::vector<float>(4, 0.0f));
    std::vector<float> part = {5, 6}, full(4);
    sbp::boxing(pl, part.data(), {Layout::split(0)}, full.data(), {Layout::partialMax()}, {4}, cfxFloat32);
    const float lo = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(full, rk.rank == 0 ? std::vector<float>({5, 6, lo, lo}) : std::vector<float>({lo, lo, 5, 6}));
    // P -> Pmax (sbp.h): ReduceScatter, then each rank holds its reduced part and -inf elsewhere, not
    // the whole reduced tensor; their maximum is the sum.
    std::vector<float> share = {1.0f + rk.rank, 2, 3, 4.0f * (rk.rank + 1)}, mine(4);
    sbp::boxing(pl, share.data(), {Layout::partialSum()}, mine.data(), {Layout::partialMax()}, {4}, cfxFloat32);
    EXPECT_EQ(mine, rk.rank == 0 ? std::vector<float>({3, 4, lo, lo}) : std::vector<float>({lo, lo, 6, 12}));
  });
}

TEST(SbpPlan, CollectivesAndBytes) {
  const Shape s{8, 12};  // 96 floats, 384 bytes
  const std::vector<int> m{4};
  EXPECT_EQ(sbp::boxingCost({Layout::partialSum()}, {Layout::broadcast()}, s, cfxFloat32, m), 576u);
  EXPECT_EQ(sbp::boxingCost({Layout::partialSum()}, {Layout::split(0)}, s, cfxFloat32, m), 288u);
  EXPECT_EQ(sbp::boxingCost({Layout::split(0)}, {Layout::broadcast()}, s, cfxFloat32, m), 288u);
  EXPECT_EQ(sbp::boxingCost({Layout::split(0)}, {Layout::split(1)}, s, cfxFloat32, m), 72u);
  EXPECT_EQ(sbp::boxingCost({Layout::broadcast()}, {Layout::split(1)}, s, cfxFloat32, m), 0u);
  EXPECT_EQ(sbp::boxingCost({Layout::split(1)}, {Layout::partialSum()}, s, cfxFloat32, m), 0u);
  EXPECT_EQ(sbp::boxingPlan({Layout::partialSum()}, {Layout::split(1)}, s, cfxFloat32, m),
            "axis 0: P -> S(1) (ReduceScatter, 288 bytes)");
  // Another partial kind: reduce-scatter, then each rank's part in zeros (half an AllReduce).
  EXPECT_EQ(sbp::boxingPlan({Layout::partialMax()}, {Layout::partialSum()}, s, cfxFloat32, m),
            "axis 0: Pmax -> S(0) (ReduceScatter, 288 bytes); axis 0: S(0) -> P (local, 0 bytes)");
  EXPECT_EQ(sbp::boxingPlan({Layout::broadcast()}, {Layout::broadcast()}, s, cfxFloat32, m), "no communication");
  // Uneven: the largest share counts (7 rows on 4 ranks: 2 rows of 5 floats).
  EXPECT_EQ(sbp::boxingCost({Layout::split(0)}, {Layout::broadcast()}, {7, 5}, cfxFloat32, m), 3u * 2 * 5 * 4);
}

TEST(SbpPlan, NdMeshOrdersAndDetours) {
  const Shape s{8, 12};
  const std::vector<int> m{2, 2};
  const Layout S0 = Layout::split(0), S1 = Layout::split(1), B = Layout::broadcast(), P = Layout::partialSum();
  // Inner axis split along the same dimension: gathering the outer axis first would interleave
  // rows, so the inner axis moves its split to the other dimension and back (240 bytes; through
  // Broadcast it would be 288).
  EXPECT_EQ(sbp::boxingPlan({S0, S0}, {B, S0}, s, cfxFloat32, m),
            "axis 1: S(0) -> S(1) (AlltoAll, 48 bytes); axis 0: S(0) -> B (AllGather, 96 bytes); "
            "axis 1: S(1) -> S(0) (AlltoAll, 96 bytes)");
  // Different dimensions commute: one step.
  EXPECT_EQ(sbp::boxingPlan({S0, S1}, {B, S1}, s, cfxFloat32, m), "axis 0: S(0) -> B (AllGather, 96 bytes)");
  // (P, P) -> (B, B): two AllReduces would send 768 bytes; reduce-scatter inside, allreduce the
  // half across, all-gather inside sends 576 (hierarchical AllReduce).
  EXPECT_EQ(sbp::boxingCost({P, P}, {B, B}, s, cfxFloat32, m), 576u);
  EXPECT_EQ(sbp::boxingCost({P, P}, {S0, B}, s, cfxFloat32, m), 384u);
  // A partial of another kind inside: the outer reduction waits until the inner one is done.
  EXPECT_EQ(sbp::boxingPlan({P, Layout::partialMax()}, {B, B}, s, cfxFloat32, m),
            "axis 1: Pmax -> S(0) (ReduceScatter, 192 bytes); axis 0: P -> B (AllReduce, 192 bytes); "
            "axis 1: S(0) -> B (AllGather, 192 bytes)");
}

TEST(SbpPlan, BadArguments) {
  const Shape s{4, 4};
  auto code = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return cfxSuccess;
  };
  EXPECT_EQ(code([&] { sbp::boxingCost({Layout::split(2)}, {Layout::broadcast()}, s, cfxFloat32, {2}); }),
            cfxInvalidArgument);
  EXPECT_EQ(code([&] { sbp::boxingCost({Layout::broadcast()}, {Layout::broadcast()}, s, cfxFloat32, {2, 2}); }),
            cfxInvalidArgument);
  EXPECT_EQ(code([&] { sbp::boxingCost({Layout::broadcast()}, {Layout::broadcast()}, {-1}, cfxFloat32, {2}); }),
            cfxInvalidArgument);
  EXPECT_EQ(code([&] {
              sbp::boxingCost({Layout::broadcast()}, {Layout::broadcast()}, s, static_cast<cfxDataType_t>(99), {2});
            }),
            cfxInvalidArgument);
  runRanks(2, [&](Rank& rk) {
    EXPECT_EQ(code([&] { sbp::Placement pl(rk.comm, {3}); }), cfxInvalidArgument);
    EXPECT_EQ(code([&] { sbp::Placement pl(rk.comm, {2, 0}); }), cfxInvalidArgument);
  });
}

}  // namespace
}  // namespace cfxtest
