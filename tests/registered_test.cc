// Registered buffers (cfxMemAlloc, issue #31 section 3): collectives on them run with no staging
// copy and give bitwise the staged path's results, in place and out of place, at 1 to 8 ranks,
// every datatype and op; every rank takes the staged path when one rank's buffer is plain; peers'
// buffers are really mapped (their memory files appear in /proc/self/maps) and unmapped again once
// freed; bad pointers are cfxInvalidArgument.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"
#include "random_data.h"

namespace cfxtest {
namespace {

int mappedShareables() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("memfd:cfx-shareable") != std::string::npos;
  return n;
}

enum class C { kAllReduce, kReduce, kReduceScatter, kAllGather, kBroadcast };
const char* name(C c) {
  static const char* names[] = {"AllReduce", "Reduce", "ReduceScatter", "AllGather", "Broadcast"};
  return names[static_cast<int>(c)];
}

cfxResult_t run(C c, const void* send, void* recv, size_t count, cfxDataType_t t, cfxRedOp_t op, int root,
                cfxComm_t comm) {
  switch (c) {
    case C::kAllReduce: return cfxAllReduce(send, recv, count, t, op, comm, nullptr);
    case C::kReduce: return cfxReduce(send, recv, count, t, op, root, comm, nullptr);
    case C::kReduceScatter: return cfxReduceScatter(send, recv, count, t, op, comm, nullptr);
    case C::kAllGather: return cfxAllGather(send, recv, count, t, comm, nullptr);
    default: return cfxBroadcast(send, recv, count, t, root, comm, nullptr);
  }
}

// Elements of the send and receive buffers of rank `rank` for `count`.
void sizes(C c, size_t count, int n, size_t& send, size_t& recv) {
  send = recv = count;
  if (c == C::kReduceScatter) send = count * n;
  if (c == C::kAllGather) recv = count * n;
}

// Shareable memory for a test's calls, allocated once (registered with the communicator, or not),
// so the peers map it once.
struct Arena {
  Arena(Rank& rk, size_t bytes, bool registerMine) : comm(registerMine ? rk.comm : nullptr), size(bytes) {
    EXPECT_EQ(cfxMemAlloc(&base, bytes, comm), cfxSuccess) << cfxGetLastError(rk.comm);
  }
  ~Arena() { EXPECT_EQ(cfxMemFree(base, comm), cfxSuccess); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  cfxComm_t comm;
  size_t size;
  void* base = nullptr;
};

// One call on registered buffers against the same call on plain ones (the staged path), in place
// or not. Returns false (after failing the test) on a difference.
bool compareOnce(Rank& rk, Arena& arena, C c, cfxDataType_t t, cfxRedOp_t op, size_t count, bool inPlace) {
  const int n = rk.nranks, me = rk.rank, root = n - 1;
  const size_t es = typeSize(t);
  size_t sendElems, recvElems;
  sizes(c, count, n, sendElems, recvElems);
  auto input = randomData(t, sendElems, 7919u * (me + 1) + static_cast<uint32_t>(count) + 31u * t);
  // The staged result.
  std::vector<std::byte> plainRecv(recvElems * es, std::byte{0x5a});
  std::vector<std::byte> plainSend = input;
  if (run(c, plainSend.data(), plainRecv.data(), count, t, op, root, rk.comm) != cfxSuccess) {
    ADD_FAILURE() << name(c) << " plain: " << cfxGetLastError(rk.comm);
    return false;
  }
  // The same on registered memory: the arena holding both buffers (or one in place).
  const size_t sendBytes = sendElems * es, recvBytes = recvElems * es;
  if (sendBytes + recvBytes + 64 > arena.size) {
    ADD_FAILURE() << "arena too small";
    return false;
  }
  auto* base = static_cast<std::byte*>(arena.base);
  std::byte* recv = base + ((sendBytes + 63) / 64) * 64;
  std::byte* send = base;
  if (inPlace) {
    recv = base;
    // In place: AllGather's input is this rank's block of the output, ReduceScatter's output is
    // this rank's block of the input.
    if (c == C::kAllGather) send = base + me * count * es;
    if (c == C::kReduceScatter) recv = base + me * count * es;
    if (c == C::kAllGather) std::memset(base, 0x5a, recvBytes);
  } else {
    std::memset(recv, 0x5a, recvBytes);
  }
  std::memcpy(send, input.data(), sendBytes);
  bool ok = true;
  if (run(c, send, recv, count, t, op, root, rk.comm) != cfxSuccess) {
    ADD_FAILURE() << name(c) << " registered: " << cfxGetLastError(rk.comm);
    ok = false;
  }
  const bool receives = c != C::kReduce || me == root;
  if (ok && receives && std::memcmp(recv, plainRecv.data(), recvBytes) != 0) {
    size_t i = 0;
    while (std::memcmp(recv + i * es, plainRecv.data() + i * es, es) == 0) ++i;
    ADD_FAILURE() << name(c) << " dtype " << t << " op " << op << " count " << count << (inPlace ? " in place" : "")
                  << " on " << n << " ranks: rank " << me << " differs from the staged path at element " << i;
    ok = false;
  }
  return ok;
}

class RegisteredTest : public ::testing::TestWithParam<int> {};

RunOptions everySize() {
  RunOptions o;
  o.env = {"CFX_REGISTERED_MIN_BYTES=1"};  // the zero-copy path from the first byte
  return o;
}

TEST_P(RegisteredTest, EveryCollectiveDatatypeAndOpMatchesTheStagedPathBitwise) {
  runRanks(GetParam(), [](Rank& rk) {
    Arena arena(rk, 2 * 70001 * 8 * rk.nranks + 4096, true);
    for (C c : {C::kAllReduce, C::kReduce, C::kReduceScatter, C::kAllGather, C::kBroadcast}) {
      const bool reduces = c == C::kAllReduce || c == C::kReduce || c == C::kReduceScatter;
      for (int t = 0; t < cfxNumTypes; ++t) {
        for (int op = 0; op < (reduces ? cfxNumOps : 1); ++op) {
          for (size_t count : {size_t{1}, size_t{777}, size_t{70001}}) {
            for (bool inPlace : {false, true}) {
              if (!compareOnce(rk, arena, c, static_cast<cfxDataType_t>(t), static_cast<cfxRedOp_t>(op), count, inPlace)) {
                return;
              }
            }
          }
        }
      }
    }
    // The zero-copy path ran: the peers' memory files were mapped here.
    if (rk.nranks > 1) {
      EXPECT_GT(mappedShareables(), 0) << "no peer's registered buffer was ever mapped";
    }
  }, everySize());
}

// 12 MiB of fp32: past the streaming-store threshold, many blocks.
void largeMessages(Rank& rk) {
  const size_t count = (3u << 20) + 5;
  Arena arena(rk, 2 * count * 4 + 4096, true);
  for (C c : {C::kAllReduce, C::kReduce, C::kReduceScatter, C::kAllGather}) {
    const size_t n = c == C::kAllReduce || c == C::kReduce ? count : count / rk.nranks;
    if (!compareOnce(rk, arena, c, cfxFloat32, cfxSum, n, false)) return;
  }
  ASSERT_TRUE(compareOnce(rk, arena, C::kAllReduce, cfxBfloat16, cfxAvg, count, true));
  ASSERT_TRUE(compareOnce(rk, arena, C::kReduce, cfxInt32, cfxMax, count, true));
  ASSERT_TRUE(compareOnce(rk, arena, C::kReduceScatter, cfxFloat16, cfxSum, count / rk.nranks, true));
}

TEST_P(RegisteredTest, LargeMessagesAtTheDefaultThreshold) {
  runRanks(GetParam(), largeMessages);
}

// ReduceScatter needs only the inputs registered: into plain outputs each rank reduces its own
// block alone (no peer can reach its output), small and large (streaming stores possible).
TEST_P(RegisteredTest, ReduceScatterIntoPlainOutputsMatchesTheStagedPathBitwise) {
  runRanks(GetParam(), [](Rank& rk) {
    const int n = rk.nranks;
    for (size_t count : {size_t{70001}, size_t{(1u << 20) + 3}}) {
      Arena arena(rk, count * 4 * n + 4096, true);
      const auto input = randomData(cfxFloat32, count * n, 17u * (rk.rank + 1) + static_cast<uint32_t>(count));
      std::vector<std::byte> plainSend = input, plainRecv(count * 4), recv(count * 4, std::byte{0x5a});
      CFX_ASSERT_OK(cfxReduceScatter(plainSend.data(), plainRecv.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
      std::memcpy(arena.base, input.data(), input.size());
      CFX_ASSERT_OK(cfxReduceScatter(arena.base, recv.data(), count, cfxFloat32, cfxSum, rk.comm, nullptr));
      ASSERT_EQ(std::memcmp(recv.data(), plainRecv.data(), recv.size()), 0) << "count " << count << ", rank " << rk.rank;
    }
    if (n > 1) {
      EXPECT_GT(mappedShareables(), 0) << "no peer's registered buffer was ever mapped";
    }
  }, everySize());
}

// AllReduce and Reduce write their outputs one way with ordinary stores (reduced into one output,
// copied into the others) and another with streaming stores (reduced tile by tile, each tile
// streamed into every output); ReduceScatter straight into its output with either kind: each kind
// forced.
RunOptions storesForced(bool streaming) {
  RunOptions o;
  o.env = {streaming ? "CFX_STREAMING_STORES=1" : "CFX_STREAMING_STORES=0"};
  return o;
}

class RegisteredStoresTest : public ::testing::TestWithParam<int> {};

TEST_P(RegisteredStoresTest, LargeMessagesWithStreamingStores) {
  runRanks(GetParam(), largeMessages, storesForced(true));
}

TEST_P(RegisteredStoresTest, LargeMessagesWithOrdinaryStores) {
  runRanks(GetParam(), largeMessages, storesForced(false));
}

INSTANTIATE_TEST_SUITE_P(Ranks, RegisteredStoresTest, ::testing::Values(2, 3));

TEST_P(RegisteredTest, OneRankWithPlainMemoryPutsEveryRankOnTheStagedPath) {
  runRanks(GetParam(), [](Rank& rk) {
    // The last rank allocates without registering: nobody may map anything, results still exact.
    const bool registerMine = rk.rank != rk.nranks - 1;
    {
      Arena arena(rk, 2 * 4099 * 4 * rk.nranks + 4096, registerMine);
      for (C c : {C::kAllReduce, C::kReduceScatter, C::kAllGather, C::kBroadcast}) {
        if (!compareOnce(rk, arena, c, cfxFloat32, cfxSum, 4099, false)) return;
      }
      EXPECT_EQ(mappedShareables(), 1) << "a peer's buffer was mapped although one rank's was plain";
    }
  }, everySize());
}

INSTANTIATE_TEST_SUITE_P(Ranks, RegisteredTest, ::testing::Values(1, 2, 3, 4, 8));

TEST(Registered, FreedBuffersAreUnmappedByThePeers) {
  runRanks(3, [](Rank& rk) {
    const size_t count = 1 << 18;
    for (int round = 0; round < 40; ++round) {  // more rounds than the notice board holds
      float* buf = nullptr;
      CFX_ASSERT_OK(cfxMemAlloc(reinterpret_cast<void**>(&buf), count * 4, rk.comm));
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(rk.rank + round);
      CFX_ASSERT_OK(cfxAllReduce(buf, buf, count, cfxFloat32, cfxSum, rk.comm, nullptr));
      const float want = static_cast<float>(3 * round + 3);
      ASSERT_EQ(buf[0], want);
      ASSERT_EQ(buf[count - 1], want);
      CFX_ASSERT_OK(cfxMemFree(buf, rk.comm));
      // Own allocation gone; the peers' last ones at most (dropped at the next lookup).
      ASSERT_LE(mappedShareables(), rk.nranks - 1) << "round " << round;
    }
  }, everySize());
}

TEST(Registered, RegisterWithASecondCommunicator) {
  runRanks(2, [](Rank& rk) {
    cfxComm_t other = nullptr;
    CFX_ASSERT_OK(cfxCommSplit(rk.comm, 0, rk.rank, &other, nullptr));
    const size_t count = 1 << 16;
    float* buf = nullptr;
    CFX_ASSERT_OK(cfxMemAlloc(reinterpret_cast<void**>(&buf), count * 4, nullptr));
    void* handle = nullptr;
    CFX_ASSERT_OK(cfxCommRegister(other, buf + 16, 64, &handle));
    for (size_t i = 0; i < count; ++i) buf[i] = 1.0f + rk.rank;
    CFX_ASSERT_OK(cfxAllReduce(buf, buf, count, cfxFloat32, cfxSum, other, nullptr));
    EXPECT_EQ(buf[count / 2], 3.0f);
    EXPECT_GT(mappedShareables(), 1);
    CFX_ASSERT_OK(cfxCommDeregister(other, handle));
    EXPECT_EQ(cfxCommDeregister(other, handle), cfxInvalidArgument);
    CFX_ASSERT_OK(cfxMemFree(buf, nullptr));
    CFX_ASSERT_OK(cfxCommDestroy(other));
  }, everySize());
}

TEST(Registered, BadPointersAreInvalidArguments) {
  runRanks(1, [](Rank& rk) {
    std::vector<float> plain(1024);
    void* handle = nullptr;
    EXPECT_EQ(cfxMemAlloc(nullptr, 16, rk.comm), cfxInvalidArgument);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("ptr is NULL"), std::string::npos);
    EXPECT_EQ(cfxCommRegister(rk.comm, plain.data(), 4096, &handle), cfxInvalidArgument);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("not memory from cfxMemAlloc"), std::string::npos)
        << cfxGetLastError(rk.comm);
    EXPECT_EQ(cfxMemFree(plain.data(), rk.comm), cfxInvalidArgument);
    void* mem = nullptr;
    CFX_ASSERT_OK(cfxMemAlloc(&mem, 0, rk.comm));  // zero bytes: a valid pointer
    EXPECT_NE(mem, nullptr);
    EXPECT_EQ(cfxCommRegister(rk.comm, mem, 1 << 20, &handle), cfxInvalidArgument) << "past the allocation";
    CFX_ASSERT_OK(cfxMemFree(mem, rk.comm));
    EXPECT_EQ(cfxMemFree(mem, rk.comm), cfxInvalidArgument) << "freed twice";
    EXPECT_EQ(cfxMemFree(nullptr, rk.comm), cfxSuccess);
  });
}

}  // namespace
}  // namespace cfxtest
