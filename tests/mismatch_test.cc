// Ranks that disagree about a collective call (which collective, its count, datatype, op or root):
// every kind of mismatch on every path (the latency path that returns early, and each forced
// algorithm, and the automatic choice at three sizes), on 2, 3 and 4 ranks, each on a fresh
// communicator split from the job's.
//
// What every rank must see (README, "Collectives"): the mismatched call either fails with
// cfxInvalidUsage and leaves the output as it was, or (a rank that returned early: Broadcast's root
// and readers and Reduce's other ranks on the latency path) succeeds with exactly the output its own
// call would have had, from data a rank making that same call sent; and then one of its next
// CFX_RUNAHEAD calls on the communicator fails with cfxInvalidUsage naming the mismatch (each call
// before it succeeds with exactly its own output), as cfxCommGetAsyncError does. The matrix runs
// with the default window (126) and with 1, where the very next call fails. No rank ever holds data
// nobody sent it, and nothing hangs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "cases.h"
#include "harness.h"

namespace cfxtest {
namespace {

using C = CollKind;
enum class Kind { kCollective, kCount, kCountAcrossPaths, kDatatype, kOp, kRoot };

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kCollective: return "collective";
    case Kind::kCount: return "count";
    case Kind::kCountAcrossPaths: return "count (another path)";
    case Kind::kDatatype: return "datatype";
    case Kind::kOp: return "op";
    case Kind::kRoot: return "root";
  }
  return "?";
}

struct Call {
  C coll;
  size_t count;
  cfxDataType_t type;
  cfxRedOp_t op;
  int root;
};

// A path: CFX_ALGO for the communicator, and the count that lands on it.
struct Path {
  const char* algo;
  size_t count;
  const char* name;
};
const Path kPaths[] = {
    {"auto", 7, "latency"},            // the mailbox path, where ranks return early
    {"mailbox", 7, "mailbox"},         // forced
    {"direct", 4099, "direct"},        // forced (its data-movement collectives are staged)
    {"rsag", 4099, "rsag"},            // forced
    {"auto", 4099, "autoMedium"},     // direct AllReduce/Reduce, staged data movement
    {"auto", 1 << 18, "autoLarge"},   // rsag, and single-copy data movement where the host allows it
};

// This rank's call in a scenario: the base call, changed for the deviating ranks. Root mismatches
// split the ranks in two halves with different roots (two ranks that each think they are the root).
Call callOf(Kind k, C coll, const Path& path, int rank, int n) {
  Call c{coll, path.count, cfxFloat32, cfxSum, 0};
  const bool odd = rank == n - 1;
  switch (k) {
    case Kind::kCollective:
      if (odd) c.coll = coll == C::kAllReduce ? C::kAllGather : C::kAllReduce;
      break;
    case Kind::kCount: c.count += odd ? 1 : 0; break;
    case Kind::kCountAcrossPaths:  // onto another path: the mailbox's neighbour, or down from the large one
      if (odd) c.count = path.count < 4096 ? path.count * 64 : path.count / 64;
      break;
    case Kind::kDatatype: c.type = odd ? cfxInt32 : cfxFloat32; break;
    case Kind::kOp: c.op = odd ? cfxMax : cfxSum; break;
    case Kind::kRoot: c.root = rank >= n / 2 ? n - 1 : 0; break;
  }
  return c;
}

// Element k of rank r's input, exact in float32 and int32 (sums of 8 ranks included).
int32_t input(int r, size_t k) { return (r + 1) * 1000 + static_cast<int32_t>(k % 997); }

size_t sendElems(const Call& c, int n) {
  return (c.coll == C::kReduceScatter || c.coll == C::kAlltoAll) ? c.count * n : c.count;
}
size_t recvElems(const Call& c, int n) {
  return (c.coll == C::kAllGather || c.coll == C::kAlltoAll) ? c.count * n : c.count;
}

// Writes value v as element i of a buffer of `type` (4 bytes either way).
void put(std::vector<uint8_t>& buf, cfxDataType_t type, size_t i, int64_t v) {
  if (type == cfxInt32) {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(buf.data() + 4 * i, &x, 4);
  } else {
    float x = static_cast<float>(v);
    std::memcpy(buf.data() + 4 * i, &x, 4);
  }
}

// The output `c` gives rank `me` when every rank makes the same call; empty when it writes none.
std::vector<uint8_t> expectedOutput(const Call& c, int me, int n) {
  std::vector<uint8_t> out(4 * recvElems(c, n));
  auto reduceAt = [&](size_t k) {
    int64_t acc = input(0, k);
    for (int r = 1; r < n; ++r) acc = c.op == cfxMax ? std::max<int64_t>(acc, input(r, k)) : acc + input(r, k);
    return acc;
  };
  switch (c.coll) {
    case C::kAllReduce:
      for (size_t i = 0; i < c.count; ++i) put(out, c.type, i, reduceAt(i));
      break;
    case C::kReduce:
      if (me != c.root) return {};
      for (size_t i = 0; i < c.count; ++i) put(out, c.type, i, reduceAt(i));
      break;
    case C::kBroadcast:
      for (size_t i = 0; i < c.count; ++i) put(out, c.type, i, input(c.root, i));
      break;
    case C::kAllGather:
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < c.count; ++i) put(out, c.type, r * c.count + i, input(r, i));
      }
      break;
    case C::kReduceScatter:
      for (size_t i = 0; i < c.count; ++i) put(out, c.type, i, reduceAt(me * c.count + i));
      break;
    case C::kAlltoAll:
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < c.count; ++i) put(out, c.type, r * c.count + i, input(r, me * c.count + i));
      }
      break;
    case C::kSendRecv: break;
    case C::kAlltoAllv: break;
  }
  return out;
}

cfxResult_t issue(const Call& c, const void* send, void* recv, cfxComm_t comm, cfxStream_t stream) {
  switch (c.coll) {
    case C::kAllReduce: return cfxAllReduce(send, recv, c.count, c.type, c.op, comm, stream);
    case C::kReduce: return cfxReduce(send, recv, c.count, c.type, c.op, c.root, comm, stream);
    case C::kBroadcast: return cfxBroadcast(send, recv, c.count, c.type, c.root, comm, stream);
    case C::kAllGather: return cfxAllGather(send, recv, c.count, c.type, comm, stream);
    case C::kReduceScatter: return cfxReduceScatter(send, recv, c.count, c.type, c.op, comm, stream);
    case C::kAlltoAll: return cfxAlltoAll(send, recv, c.count, c.type, comm, stream);
    case C::kSendRecv: break;
    case C::kAlltoAllv: break;
  }
  return cfxInternalError;
}

constexpr uint8_t kSentinel = 0xA5;

// One scenario on a fresh communicator: "" or what went wrong on this rank.
std::string runScenario(const Rank& rk, Kind kind, C coll, const Path& path, bool onStream, int window) {
  const int n = rk.nranks, me = rk.rank;
  const Call mine = callOf(kind, coll, path, me, n);
  const std::string what = std::string(kindName(kind)) + " mismatch, " + collName(coll) + ", " + path.name + " path" +
                           (onStream ? " on a stream" : "") + ", rank " + std::to_string(me) + " of " + std::to_string(n);
  setenv("CFX_ALGO", path.algo, 1);
  cfxComm_t comm = nullptr;
  if (cfxCommSplit(rk.comm, 0, me, &comm, nullptr) != cfxSuccess) return what + ": split failed: " + cfxGetLastError(rk.comm);
  unsetenv("CFX_ALGO");
  // Generous buffers, whichever call any rank makes.
  const size_t elems = std::max(path.count, path.count < 4096 ? path.count * 64 : 0) * n + 8;
  std::vector<uint8_t> send(4 * elems), recv(4 * elems, kSentinel);
  for (size_t i = 0; i < sendElems(mine, n); ++i) put(send, mine.type, i, input(me, i));
  cfxStream_t stream = nullptr;
  if (onStream && cfxStreamCreate(&stream) != cfxSuccess) return what + ": no stream";
  cfxResult_t r = issue(mine, send.data(), recv.data(), comm, stream);
  if (r == cfxSuccess && stream != nullptr) r = cfxStreamSynchronize(stream);
  const std::string firstError = r == cfxSuccess ? "" : cfxGetLastError(comm);
  std::string problem;
  const size_t outBytes = 4 * recvElems(mine, n);
  const bool untouched = std::all_of(recv.begin(), recv.end(), [](uint8_t b) { return b == kSentinel; });
  if (r == cfxSuccess) {
    // Only data a rank making the same call sent; and nothing written past the output.
    std::vector<uint8_t> want = expectedOutput(mine, me, n);
    if (want.empty() ? !untouched : std::memcmp(recv.data(), want.data(), outBytes) != 0) {
      problem = "succeeded with an output its call does not give";
    }
    if (!std::all_of(recv.begin() + outBytes, recv.end(), [](uint8_t b) { return b == kSentinel; })) {
      problem = "wrote past its output";
    }
  } else if (r != cfxInvalidUsage) {
    problem = "failed with " + std::string(cfxGetErrorString(r)) + " instead of invalid usage: " + firstError;
  } else {
    // A rank that failed holds nothing, or its own call's output from ranks that made that call (a
    // Broadcast reader that read its root, then found a third rank in another call).
    std::vector<uint8_t> own = expectedOutput(mine, me, n);
    const bool ownCall = !own.empty() && std::memcmp(recv.data(), own.data(), outBytes) == 0;
    if (!untouched && !ownCall) problem = "failed but wrote an output its call does not give";
    if (firstError.find("mismatch") == std::string::npos) problem = "error does not say mismatch: " + firstError;
  }
  // One of the next `window` calls fails on every rank, naming the mismatch, and so does the
  // asynchronous error; each call before it, which all ranks made alike, has exactly its output.
  cfxResult_t next = cfxSuccess;
  float sum[3] = {-1, -1, -1};
  int calls = 0;
  while (next == cfxSuccess && calls < window && problem.empty()) {
    float one[3] = {1, 1, 1};
    std::fill(sum, sum + 3, -1.0f);
    next = cfxAllReduce(one, sum, 3, cfxFloat32, cfxSum, comm, stream);
    if (next == cfxSuccess && stream != nullptr) next = cfxStreamSynchronize(stream);
    ++calls;
    if (next == cfxSuccess && sum[0] != static_cast<float>(n)) problem = "a call after it succeeded with a wrong output";
  }
  const std::string nextError = cfxGetLastError(comm);
  cfxResult_t async = cfxSuccess;
  cfxCommGetAsyncError(comm, &async);
  if (problem.empty() && next != cfxInvalidUsage) {
    problem = "the next " + std::to_string(calls) + " calls ended with " + std::string(cfxGetErrorString(next)) + ": " +
              nextError;
  }
  if (problem.empty() && nextError.find("mismatch") == std::string::npos) problem = "the failing call's error: " + nextError;
  if (problem.empty() && sum[0] != -1) problem = "the failing call wrote its output";
  if (problem.empty() && async != cfxInvalidUsage) problem = "async error " + std::string(cfxGetErrorString(async));
  if (stream != nullptr) cfxStreamDestroy(stream);
  cfxCommDestroy(comm);
  return problem.empty() ? "" : what + ": " + problem + (firstError.empty() ? "" : " (first error: " + firstError + ")");
}

void matrix(const Rank& rk, const Path& path, int window) {
  const C colls[] = {C::kAllReduce, C::kReduce, C::kBroadcast, C::kAllGather, C::kReduceScatter, C::kAlltoAll};
  for (C coll : colls) {
    std::vector<Kind> kinds = {Kind::kCollective, Kind::kCount, Kind::kCountAcrossPaths, Kind::kDatatype};
    if (reduces(coll)) kinds.push_back(Kind::kOp);
    if (coll == C::kBroadcast || coll == C::kReduce) kinds.push_back(Kind::kRoot);
    for (Kind k : kinds) ASSERT_EQ(runScenario(rk, k, coll, path, false, window), "");
  }
  // The same on a stream, where the error surfaces in cfxStreamSynchronize.
  for (Kind k : {Kind::kRoot, Kind::kCount}) {
    for (C coll : {C::kBroadcast, C::kReduce}) ASSERT_EQ(runScenario(rk, k, coll, path, true, window), "");
  }
}

// (ranks, path, CFX_RUNAHEAD)
class Mismatch : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(Mismatch, FailsEveryRankWithinItsRunAheadWindow) {
  const int ranks = std::get<0>(GetParam());
  const Path& path = kPaths[std::get<1>(GetParam())];
  const int window = std::get<2>(GetParam());
  RunOptions o;
  o.env = {"CFX_TIMEOUT=20", "CFX_SHM_P2P_BYTES=1048576", "CFX_RUNAHEAD=" + std::to_string(window)};
  runRanks(ranks, [&path, window](Rank& rk) { matrix(rk, path, window); }, o);
}

// The issue's own case, by itself: two ranks each passing itself as Broadcast's root on the latency
// path. A root reads no one and returns once it published, unless the other's call is already
// there (then it fails at once); with CFX_RUNAHEAD=1 its next call fails naming the other. Seen
// passing silently before the roots confirmed each other's calls (Engine's early op).
TEST(Mismatch, TwoSelfRootsOnTheLatencyPath) {
  RunOptions o;
  o.env = {"CFX_RUNAHEAD=1"};
  runRanks(2, [](Rank& rk) {
    std::vector<float> in(256, static_cast<float>(rk.rank + 1)), out(256, -1.0f);
    cfxResult_t r = cfxBroadcast(in.data(), out.data(), 256, cfxFloat32, rk.rank, rk.comm, nullptr);
    ASSERT_TRUE(r == cfxSuccess || r == cfxInvalidUsage) << cfxGetErrorString(r);
    ASSERT_EQ(out[255], static_cast<float>(rk.rank + 1));  // its own, as the root it thinks it is
    float x = 1, y = 0;
    ASSERT_EQ(cfxAllReduce(&x, &y, 1, cfxFloat32, cfxSum, rk.comm, nullptr), cfxInvalidUsage);
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_NE(msg.find("root " + std::to_string(1 - rk.rank)), std::string::npos) << msg;
    EXPECT_NE(msg.find("collective mismatch"), std::string::npos) << msg;
  }, o);
}

// The same with the default window, where both roots may go on: each later call (Broadcasts from
// root 0, which both agree on) returns exactly rank 0's data or fails, and the mismatch fails one of
// the next 126 calls on both ranks, naming the other root.
TEST(Mismatch, TwoSelfRootsWithinTheDefaultWindow) {
  runRanks(2, [](Rank& rk) {
    std::vector<float> in(256, static_cast<float>(rk.rank + 1)), out(256, -1.0f);
    cfxResult_t r = cfxBroadcast(in.data(), out.data(), 256, cfxFloat32, rk.rank, rk.comm, nullptr);
    ASSERT_TRUE(r == cfxSuccess || r == cfxInvalidUsage) << cfxGetErrorString(r);
    ASSERT_EQ(out[255], static_cast<float>(rk.rank + 1));
    int calls = 0;
    while (r == cfxSuccess && calls < 126) {
      int64_t v = rk.rank == 0 ? 1000 + calls : -1;
      r = cfxBroadcast(&v, &v, 1, cfxInt64, 0, rk.comm, nullptr);
      if (r == cfxSuccess) {
        ASSERT_EQ(v, 1000 + calls) << "call " << calls;
      }
      ++calls;
    }
    ASSERT_EQ(r, cfxInvalidUsage) << cfxGetErrorString(r) << " after " << calls << " calls";
    const std::string msg = cfxGetLastError(rk.comm);
    EXPECT_NE(msg.find("root " + std::to_string(1 - rk.rank)), std::string::npos) << msg;
    EXPECT_NE(msg.find("collective mismatch"), std::string::npos) << msg;
  });
}

std::string matrixName(const ::testing::TestParamInfo<std::tuple<int, int, int>>& info) {
  return std::to_string(std::get<0>(info.param)) + "ranks_" + kPaths[std::get<1>(info.param)].name + "_runahead" +
         std::to_string(std::get<2>(info.param));
}

// Every path with the default window (126), and the latency path, where ranks return early, with a
// window of one call (the next call fails).
INSTANTIATE_TEST_SUITE_P(Matrix, Mismatch,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Range(0, 6), ::testing::Values(126)),
                         matrixName);
INSTANTIATE_TEST_SUITE_P(NextCall, Mismatch,
                         ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Values(0), ::testing::Values(1)),
                         matrixName);

}  // namespace
}  // namespace cfxtest
