// Every collective x datatype x op, in place and out of place, counts 0, 1, small odd, multi-chunk
// odd and >= 4M elements, on 1 to 8 ranks, against exact expected values.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "harness.h"
#include "pattern.h"

namespace cfxtest {
namespace {

enum class C { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll };
const char* collName(C c) {
  static const char* const k[] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter", "AlltoAll"};
  return k[static_cast<int>(c)];
}
bool reduces(C c) { return c == C::kAllReduce || c == C::kReduce || c == C::kReduceScatter; }

constexpr size_t kSmallCounts[] = {0, 1, 7, 1031, 100003};
constexpr size_t kLargeCount = (size_t{4} << 20) + 1;

// Runs one case on this rank and checks the result exactly. Returns "" or a failure description.
std::string runCase(const Rank& rk, C c, cfxDataType_t t, cfxRedOp_t op, size_t count, bool inPlace) {
  const int n = rk.nranks, me = rk.rank;
  const Pattern pat(t, reduces(c) ? op : cfxSum, n);
  const size_t es = pat.elemSize();
  const int root = static_cast<int>((count + 1) % n);
  std::string what = std::string(collName(c)) + " " + typeName(t) + (reduces(c) ? std::string(" ") + opName(op) : "") +
                     " count " + std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + " nranks " +
                     std::to_string(n) + " rank " + std::to_string(me) + ":";
  // Sizes in elements of the send and receive buffers (NCCL's meaning of count).
  size_t sendElems = count, recvElems = count;
  if (c == C::kAllGather) recvElems = count * n;
  if (c == C::kReduceScatter) sendElems = count * n;
  if (c == C::kAlltoAll) sendElems = recvElems = count * n;

  // Guard bytes around the receive buffer catch writes out of bounds.
  constexpr size_t kGuard = 64;
  std::vector<uint8_t> recv(recvElems * es + 2 * kGuard, 0xA5), send(sendElems * es + 1);
  uint8_t* rbuf = recv.data() + kGuard;
  uint8_t* sbuf = send.data();
  pat.fillInput(me, 0, sendElems, sbuf);
  // Broadcast: only the root's input matters; others start from garbage.
  if (c == C::kBroadcast && me != root) std::memset(sbuf, 0x5A, sendElems * es);

  const void* sp = sbuf;
  void* rp = rbuf;
  if (inPlace) {
    switch (c) {
      case C::kAllGather:
        std::memcpy(rbuf + me * count * es, sbuf, count * es);
        sp = rbuf + me * count * es;
        break;
      case C::kReduceScatter: {
        // recvbuff == sendbuff + rank * recvcount: the send data lives in a buffer we own.
        send.resize(sendElems * es + 2 * kGuard, 0xA5);
        sbuf = send.data();
        pat.fillInput(me, 0, sendElems, sbuf);
        sp = sbuf;
        rp = sbuf + me * count * es;
        break;
      }
      default:
        std::memcpy(rbuf, sbuf, sendElems * es);
        sp = rbuf;
        break;
    }
  }

  cfxDataType_t dt = t;
  cfxResult_t res = cfxInternalError;
  switch (c) {
    case C::kAllReduce: res = cfxAllReduce(sp, rp, count, dt, op, rk.comm, nullptr); break;
    case C::kReduce: res = cfxReduce(sp, rp, count, dt, op, root, rk.comm, nullptr); break;
    case C::kBroadcast: res = cfxBroadcast(sp, rp, count, dt, root, rk.comm, nullptr); break;
    case C::kAllGather: res = cfxAllGather(sp, rp, count, dt, rk.comm, nullptr); break;
    case C::kReduceScatter: res = cfxReduceScatter(sp, rp, count, dt, op, rk.comm, nullptr); break;
    case C::kAlltoAll: res = cfxAlltoAll(sp, rp, count, dt, rk.comm, nullptr); break;
  }
  if (res != cfxSuccess) return what + " returned " + cfxGetErrorString(res) + ": " + cfxGetLastError(rk.comm);

  const uint8_t* out = static_cast<const uint8_t*>(rp);
  std::vector<uint8_t> want;
  switch (c) {
    case C::kAllReduce:
      want.resize(count * es);
      pat.fillExpected(0, count, want.data());
      break;
    case C::kReduce:
      if (me != root) return "";  // non-root receive buffers are not defined
      want.resize(count * es);
      pat.fillExpected(0, count, want.data());
      break;
    case C::kBroadcast:
      want.resize(count * es);
      pat.fillInput(root, 0, count, want.data());
      break;
    case C::kAllGather:
      want.resize(count * n * es);
      for (int r = 0; r < n; ++r) pat.fillInput(r, 0, count, want.data() + r * count * es);
      break;
    case C::kReduceScatter:
      want.resize(count * es);
      pat.fillExpected(me * count, count, want.data());
      break;
    case C::kAlltoAll:
      want.resize(count * n * es);
      for (int r = 0; r < n; ++r) pat.fillInput(r, me * count, count, want.data() + r * count * es);
      break;
  }
  std::string err = compare(out, want.data(), want.size() / es, t, what);
  if (!err.empty()) return err;
  // Nothing outside the receive buffer was written.
  if (!(inPlace && c == C::kReduceScatter)) {
    for (size_t g = 0; g < kGuard; ++g) {
      if (recv[g] != 0xA5 || recv[kGuard + recvElems * es + g] != 0xA5) return what + " wrote outside recvbuff";
    }
  }
  return "";
}

class CollectiveTest : public ::testing::TestWithParam<std::tuple<C, int>> {};

TEST_P(CollectiveTest, ExactResults) {
  auto [c, n] = GetParam();
  runRanks(n, [c = c](Rank& rk) {
    std::vector<cfxRedOp_t> ops = {cfxSum};
    if (reduces(c)) ops = {cfxSum, cfxProd, cfxMax, cfxMin, cfxAvg};
    for (int t = 0; t < cfxNumTypes; ++t) {
      for (cfxRedOp_t op : ops) {
        for (size_t count : kSmallCounts) {
          for (bool inPlace : {false, true}) {
            std::string err = runCase(rk, c, static_cast<cfxDataType_t>(t), op, count, inPlace);
            ASSERT_EQ(err, "");
          }
        }
      }
    }
  });
}

TEST_P(CollectiveTest, LargeCount) {
  auto [c, n] = GetParam();
  runRanks(n, [c = c](Rank& rk) {
    // >= 4M elements: the types of every width, with the op that stresses each one.
    const std::tuple<cfxDataType_t, cfxRedOp_t> cases[] = {
        {cfxFloat32, cfxSum}, {cfxInt8, cfxMax}, {cfxBfloat16, cfxAvg}, {cfxFloat8e5m2, cfxSum}};
    for (auto [t, op] : cases) {
      for (bool inPlace : {false, true}) {
        ASSERT_EQ(runCase(rk, c, t, op, kLargeCount, inPlace), "");
      }
      if (!reduces(c)) break;  // data movement: one type is enough at this size
    }
  });
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<C, int>>& info) {
  return std::string(collName(std::get<0>(info.param))) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(AllCollectives, CollectiveTest,
                         ::testing::Combine(::testing::Values(C::kAllReduce, C::kReduce, C::kBroadcast, C::kAllGather,
                                                              C::kReduceScatter, C::kAlltoAll),
                                            ::testing::Range(1, 9)),
                         caseName);

}  // namespace
}  // namespace cfxtest
