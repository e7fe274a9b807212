// The bootstrap under attack and misuse: garbage, wrong secrets and oversized frames are dropped
// while the job still forms; nranks mismatches, duplicate and out-of-range ranks fail every rank
// with a clear error. Ranks are threads of this process here (each with its own communicator).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "bootstrap/wire.h"
#include "conflux/conflux.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {
namespace {

using conflux::Error;
using Clock = std::chrono::steady_clock;

struct RankResult {
  cfxResult_t result = cfxInternalError;
  std::string error;
  cfxComm_t comm = nullptr;
};

// Runs cfxCommInitRank for each (rank, nranks) pair on its own thread.
std::vector<RankResult> initThreads(const cfxUniqueId& id, const std::vector<std::pair<int, int>>& ranks) {
  std::vector<RankResult> out(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      out[i].result = cfxCommInitRank(&out[i].comm, ranks[i].second, id, ranks[i].first);
      out[i].error = cfxGetLastError(nullptr);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

void destroyAll(std::vector<RankResult>& rs) {
  for (auto& r : rs) {
    if (r.comm != nullptr) {
      EXPECT_EQ(cfxCommDestroy(r.comm), cfxSuccess);
    }
  }
}

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("CFX_BOOTSTRAP_TIMEOUT", "20", 1); }
  void TearDown() override { unsetenv("CFX_BOOTSTRAP_TIMEOUT"); }
};

TEST_F(BootstrapTest, GarbageAndWrongSecretAreDroppedAndTheJobStillForms) {
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  UniqueIdData d = UniqueIdData::decode(id);
  auto deadline = Clock::now() + std::chrono::seconds(5);

  std::vector<net::Socket> attackers;
  // 1. Random garbage.
  attackers.push_back(net::connectWithRetry(d.root, deadline));
  std::vector<uint8_t> junk(4000);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 131 + 7);
  attackers.back().sendAll(junk.data(), junk.size(), deadline);
  // 2. A well-formed hello with the wrong secret, claiming rank 0.
  Secret wrong = d.secret;
  wrong[3] ^= 0x10;
  Hello h{CFX_VERSION_CODE, 3, 0, 1234, 0, "attacker"};
  auto f = frame(MsgType::kHello, wrong, encodeHello(h));
  attackers.push_back(net::connectWithRetry(d.root, deadline));
  attackers.back().sendAll(f.data(), f.size(), deadline);
  // 3. The right secret but an oversized length.
  FrameHeader big{};
  big.magic = kFrameMagic;
  big.version = kProtocolVersion;
  big.type = static_cast<uint16_t>(MsgType::kHello);
  big.length = 1u << 30;
  std::memcpy(big.secret, d.secret.data(), 16);
  attackers.push_back(net::connectWithRetry(d.root, deadline));
  attackers.back().sendAll(&big, sizeof(big), deadline);
  // 4. A connection that never says anything.
  attackers.push_back(net::connectWithRetry(d.root, deadline));

  auto ranks = initThreads(id, {{0, 3}, {1, 3}, {2, 3}});
  for (auto& r : ranks) ASSERT_EQ(r.result, cfxSuccess) << r.error;

  // The root dropped the three bad connections (EOF), without waiting for their payloads. The one
  // with the wrong secret is first told why, in a refusal that does not reveal the secret.
  for (int i = 0; i < 3; ++i) {
    if (i == 1) {
      FrameHeader r{};
      ASSERT_NO_THROW(attackers[i].recvAll(&r, sizeof(r), Clock::now() + std::chrono::seconds(5)));
      EXPECT_TRUE(isRefusal(r));
      std::string why(r.length, '\0');
      attackers[i].recvAll(why.data(), why.size(), Clock::now() + std::chrono::seconds(5));
      EXPECT_NE(why.find("wrong secret"), std::string::npos) << why;
    }
    uint8_t b;
    EXPECT_THROW(attackers[i].recvAll(&b, 1, Clock::now() + std::chrono::seconds(5)), Error) << "attacker " << i;
  }

  // The job works: an AllReduce across the three threads.
  std::vector<std::thread> ts;
  std::vector<int32_t> out(3, -1);
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] {
      int32_t x = r + 1;
      EXPECT_EQ(cfxAllReduce(&x, &out[r], 1, cfxInt32, cfxSum, ranks[r].comm, nullptr), cfxSuccess);
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(out[r], 6);
  destroyAll(ranks);
}

// The root stops listening before any rank hears that the job formed: a rank whose init returned
// can start the next job's root at the same address at once, as a rank that initialises again at
// the same CFX_ROOT_ADDR does (before, the bind failed while the old root waited for goodbyes).
TEST_F(BootstrapTest, TheRootAddressIsFreeOnceInitReturns) {
  for (int round = 0; round < 20; ++round) {
    cfxUniqueId id;
    ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
    const UniqueIdData d = UniqueIdData::decode(id);
    std::vector<RankResult> ranks(3);
    std::vector<std::thread> others;
    for (int r = 1; r < 3; ++r) {
      others.emplace_back([&, r] {
        ranks[r].result = cfxCommInitRank(&ranks[r].comm, 3, id, r);
        ranks[r].error = cfxGetLastError(nullptr);
      });
    }
    ranks[0].result = cfxCommInitRank(&ranks[0].comm, 3, id, 0);
    ranks[0].error = cfxGetLastError(nullptr);
    std::string bindError;
    try {
      net::Socket next = net::listenOn(d.root);
    } catch (const Error& e) {
      bindError = e.what();
    }
    for (auto& t : others) t.join();
    for (auto& r : ranks) ASSERT_EQ(r.result, cfxSuccess) << r.error;
    EXPECT_EQ(bindError, "") << "round " << round << ": " << d.root.str();
    destroyAll(ranks);
  }
}

// Twelve ranks: the tree (8-ary) has depth 2, so ranks 9-11 reach rank 0 through rank 1; the job
// forms and an AllReduce is right on every rank.
TEST_F(BootstrapTest, TwelveRanksFormOverATreeOfDepthTwo) {
  constexpr int n = 12;
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  std::vector<std::pair<int, int>> all;
  for (int r = 0; r < n; ++r) all.emplace_back(r, n);
  auto ranks = initThreads(id, all);
  for (int r = 0; r < n; ++r) ASSERT_EQ(ranks[r].result, cfxSuccess) << "rank " << r << ": " << ranks[r].error;
  std::vector<std::thread> ts;
  std::vector<int32_t> out(n, -1);
  for (int r = 0; r < n; ++r) {
    ts.emplace_back([&, r] {
      int32_t x = r + 1;
      EXPECT_EQ(cfxAllReduce(&x, &out[r], 1, cfxInt32, cfxSum, ranks[r].comm, nullptr), cfxSuccess);
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], n * (n + 1) / 2) << "rank " << r;
  destroyAll(ranks);
}

// Rank 10 of 12 is played by the test: it joins the root, learns its parent (rank 1) from the
// welcome, knocks on the parent's tree listener with a wrong secret and then as a rank that is no
// child of rank 1 (both dropped), and vanishes without ever connecting as itself. Every real rank
// fails within seconds with cfxRemoteError, naming rank 10, rather than waiting for the timeout.
TEST_F(BootstrapTest, ARankThatVanishesAfterJoiningIsNamedByEveryRank) {
  constexpr int n = 12;
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  UniqueIdData d = UniqueIdData::decode(id);
  std::vector<std::pair<int, int>> real;
  for (int r = 0; r < n; ++r) {
    if (r != 10) real.emplace_back(r, n);
  }
  const auto start = Clock::now();
  std::vector<RankResult> ranks;
  std::thread job([&] { ranks = initThreads(id, real); });

  const auto deadline = Clock::now() + std::chrono::seconds(15);
  net::Socket root = net::connectWithRetry(d.root, deadline);
  net::SockAddr at = net::localAddress(root);
  at.setPort(0);
  net::Socket listener = net::listenOn(at);
  Hello h{CFX_VERSION_CODE, n, 10, static_cast<int32_t>(getpid()), static_cast<uint32_t>(net::localAddress(listener).port()), "fake"};
  auto hello = frame(MsgType::kHello, d.secret, encodeHello(h));
  root.sendAll(hello.data(), hello.size(), deadline);
  FrameHeader wh{};
  root.recvAll(&wh, sizeof(wh), deadline);
  ASSERT_EQ(validateHeader(wh, d.secret), "");
  ASSERT_EQ(wh.type, static_cast<uint16_t>(MsgType::kWelcome));
  std::vector<uint8_t> payload(wh.length);
  root.recvAll(payload.data(), payload.size(), deadline);
  Welcome w = decodeWelcome(payload);
  EXPECT_EQ(w.nranks, n);
  const net::SockAddr parent = net::SockAddr::parse(w.parent);
  int32_t claims[2] = {10, 5};
  for (int i = 0; i < 2; ++i) {
    Secret secret = d.secret;
    if (i == 0) secret[0] ^= 1;
    std::vector<uint8_t> p(4);
    std::memcpy(p.data(), &claims[i], 4);
    auto f = frame(MsgType::kChild, secret, p);
    net::Socket knock = net::connectWithRetry(parent, deadline);
    knock.sendAll(f.data(), f.size(), deadline);
    uint8_t b;
    EXPECT_THROW(knock.recvAll(&b, 1, deadline), Error) << "rank 1 kept knock " << i;  // dropped: EOF
  }
  root.close();  // rank 10 vanishes
  job.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "the ranks waited for the bootstrap timeout";
  for (size_t i = 0; i < ranks.size(); ++i) {
    EXPECT_EQ(ranks[i].result, cfxRemoteError) << "rank " << real[i].first << ": " << ranks[i].error;
    EXPECT_NE(ranks[i].error.find("rank 10 (pid " + std::to_string(getpid()) + ") disconnected during initialisation"),
              std::string::npos)
        << "rank " << real[i].first << ": " << ranks[i].error;
  }
  destroyAll(ranks);
}

// A rank started with another job's unique id (a wrong secret) is told so by the root, and the
// others' timeout names the rank that never joined and counts the refused connection.
TEST_F(BootstrapTest, WrongSecretIsNamedOnBothSides) {
  setenv("CFX_BOOTSTRAP_TIMEOUT", "2", 1);
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  UniqueIdData other = UniqueIdData::decode(id);
  other.secret[0] ^= 0x5a;
  const cfxUniqueId wrong = other.encode();
  std::vector<RankResult> ranks(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      ranks[r].result = cfxCommInitRank(&ranks[r].comm, 3, r == 2 ? wrong : id, r);
      ranks[r].error = cfxGetLastError(nullptr);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ranks[2].result, cfxInvalidUsage) << ranks[2].error;
  EXPECT_NE(ranks[2].error.find("refused rank 2: wrong secret"), std::string::npos) << ranks[2].error;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].result, cfxTimeout) << ranks[r].error;
    EXPECT_NE(ranks[r].error.find("never joined: rank 2"), std::string::npos) << ranks[r].error;
    EXPECT_NE(ranks[r].error.find("refused 1 connection with a wrong secret"), std::string::npos) << ranks[r].error;
  }
  destroyAll(ranks);
}

TEST_F(BootstrapTest, NranksMismatchFailsEveryRank) {
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  auto ranks = initThreads(id, {{0, 3}, {1, 3}, {2, 4}});
  for (auto& r : ranks) {
    EXPECT_EQ(r.result, cfxInvalidUsage) << r.error;
    EXPECT_NE(r.error.find("nranks mismatch"), std::string::npos) << r.error;
  }
  destroyAll(ranks);
}

TEST_F(BootstrapTest, DuplicateRankFailsEveryRank) {
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  auto ranks = initThreads(id, {{0, 3}, {1, 3}, {1, 3}});
  for (auto& r : ranks) {
    EXPECT_EQ(r.result, cfxInvalidUsage) << r.error;
    EXPECT_NE(r.error.find("duplicate rank"), std::string::npos) << r.error;
  }
  destroyAll(ranks);
}

TEST_F(BootstrapTest, OutOfRangeRankFailsEveryRank) {
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  auto ranks = initThreads(id, {{0, 3}, {1, 3}, {5, 3}});
  EXPECT_EQ(ranks[2].result, cfxInvalidArgument) << ranks[2].error;
  for (auto& r : ranks) {
    EXPECT_NE(r.result, cfxSuccess);
    EXPECT_NE(r.error.find("out of range"), std::string::npos) << r.error;
  }
  destroyAll(ranks);
}

TEST_F(BootstrapTest, SegmentIsUnlinkedOnceAllRanksAttached) {
  char dir[] = "/tmp/cfx-shm-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("CFX_SHM_DIR", dir, 1);
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  auto ranks = initThreads(id, {{0, 4}, {1, 4}, {2, 4}, {3, 4}});
  for (auto& r : ranks) ASSERT_EQ(r.result, cfxSuccess) << r.error;
  int entries = 0;
  DIR* dp = opendir(dir);
  while (dirent* e = readdir(dp)) entries += e->d_name[0] != '.';
  closedir(dp);
  EXPECT_EQ(entries, 0) << "a segment was left in " << dir;
  destroyAll(ranks);
  unsetenv("CFX_SHM_DIR");
  rmdir(dir);
}

TEST_F(BootstrapTest, ShmTooSmallNamesTheSizeAndTheFix) {
  char dir[] = "/tmp/cfx-tiny-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  if (mount("tmpfs", dir, "tmpfs", 0, "size=1m") != 0) {
    rmdir(dir);
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  }
  setenv("CFX_SHM_DIR", dir, 1);
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess);
  auto ranks = initThreads(id, {{0, 2}, {1, 2}});
  for (auto& r : ranks) {
    EXPECT_EQ(r.result, cfxSystemError) << r.error;
    EXPECT_NE(r.error.find("MiB is needed"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("--shm-size"), std::string::npos) << r.error;
  }
  destroyAll(ranks);
  unsetenv("CFX_SHM_DIR");
  umount(dir);
  rmdir(dir);
}

TEST(Wire, HeaderChecks) {
  Secret s = randomSecret();
  auto f = frame(MsgType::kUp, s, encodeUp(TreeUp{{0, "x"}, -1, {}}));
  FrameHeader h;
  std::memcpy(&h, f.data(), sizeof(h));
  EXPECT_EQ(validateHeader(h, s), "");
  FrameHeader bad = h;
  bad.magic ^= 1;
  EXPECT_EQ(validateHeader(bad, s), "bad magic");
  bad = h;
  bad.version = 99;
  EXPECT_NE(validateHeader(bad, s).find("protocol version 99"), std::string::npos);
  bad = h;
  bad.secret[15] ^= 1;
  EXPECT_EQ(validateHeader(bad, s), "wrong secret");
  bad = h;
  bad.length = 1 << 20;
  bad.type = static_cast<uint16_t>(MsgType::kChild);
  EXPECT_NE(validateHeader(bad, s).find("exceeds the bound"), std::string::npos);
  bad = h;
  bad.type = 77;
  EXPECT_NE(validateHeader(bad, s).find("unknown message type"), std::string::npos);
  EXPECT_THROW(decodeHello({1, 2, 3}), Error);
  EXPECT_THROW(decodeWelcome({0, 0, 0, 0}), Error);
}

TEST(Wire, UniqueIdRoundTrip) {
  for (const char* addr : {"127.0.0.1:4242", "[::1]:5151"}) {
    UniqueIdData d;
    d.root = net::SockAddr::parse(addr);
    d.secret = randomSecret();
    cfxUniqueId id = d.encode();
    UniqueIdData back = UniqueIdData::decode(UniqueIdData::fromHex(UniqueIdData::toHex(id)));
    EXPECT_EQ(back.root.str(), d.root.str());
    EXPECT_EQ(back.secret, d.secret);
  }
  EXPECT_THROW(UniqueIdData::fromHex("abc"), Error);
}

}  // namespace
}  // namespace conflux::bootstrap
