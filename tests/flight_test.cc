// The flight recorder and hang forensics: real jobs that stall or call mismatched collectives
// write their records (CFX_DEBUG_DUMP_DIR, on failure and on SIGUSR1), and tools/cfx-doctor
// names the rank that is behind, or the calls that do not match, from those files alone.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace cfxtest {
namespace {

// A fresh directory for the dumps, made in the test process only (the ranks get its name in the
// environment).
std::string dumpDir() {
  if (isRankProcess()) return std::getenv("CFX_DEBUG_DUMP_DIR") ? std::getenv("CFX_DEBUG_DUMP_DIR") : "";
  char tmpl[] = "/tmp/cfx-flight-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string doctor(const std::string& dir) {
  std::string cmd = std::string("python3 ") + CFX_DOCTOR_PATH + " " + dir + " 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string ownDumpFile(const std::string& dir) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return dir + "/" + host + "." + std::to_string(getpid()) + ".json";
}

// Rank 2 stops (SIGSTOP) after three AllReduces; the others wait in the fourth until CFX_TIMEOUT.
// While they wait, rank 0 signals itself (SIGUSR1) and finds its live record on disk, waiting for
// rank 2, and goes on waiting. From the files, cfx-doctor says rank 2 is behind and that ranks 0
// and 1 wait for it in operation #4. A helper process continues rank 2 once the others are done.
// The live dump is served by the next waking wait, which on a loaded machine under ASan took 1.1 s
// in CI: the probe looks for it until 4 s, well before the 6 s timeout rewrites the same file.
TEST(Flight, StoppedRankIsNamedAndALiveJobDumpsOnSignal) {
  const std::string dir = dumpDir();
  ASSERT_FALSE(dir.empty());
  RunOptions o;
  o.env = {"CFX_TIMEOUT=6", "CFX_DEBUG_DUMP_DIR=" + dir};
  runRanks(3, [&](Rank& rk) {
    std::vector<double> a(1000, 1.0), b(1000);
    for (int i = 0; i < 3; ++i) CFX_ASSERT_OK(cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat64, cfxSum, rk.comm, nullptr));
    if (rk.rank == 2) {
      const pid_t me = getpid();
      if (fork() == 0) {  // continues rank 2 after the others timed out
        sleep(9);
        kill(me, SIGCONT);
        _exit(0);
      }
      raise(SIGSTOP);
      return;  // makes no further call: its record stays unwritten
    }
    std::thread probe;
    bool sawLive = false;
    std::string live;
    if (rk.rank == 0) {
      probe = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        kill(getpid(), SIGUSR1);
        for (int i = 0; i < 175 && !sawLive; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          live = readFile(ownDumpFile(dir));
          sawLive = live.find("\"reason\": \"SIGUSR1\"") != std::string::npos;
        }
      });
    }
    cfxResult_t r = cfxAllReduce(a.data(), b.data(), a.size(), cfxFloat64, cfxSum, rk.comm, nullptr);
    EXPECT_TRUE(r == cfxTimeout || r == cfxRemoteError) << cfxGetErrorString(r);
    if (probe.joinable()) {
      probe.join();
      EXPECT_TRUE(sawLive) << "no SIGUSR1 dump in " << ownDumpFile(dir);
      EXPECT_NE(live.find("\"state\": \"waiting\", "), std::string::npos) << live;
      EXPECT_NE(live.find("\"waitingFor\": [2]"), std::string::npos) << live;
    }
  }, o);
  if (isRankProcess()) return;
  std::string verdict = doctor(dir);
  std::printf("cfx-doctor said:\n%s", verdict.c_str());
  EXPECT_NE(verdict.find("Rank 2 of communicator"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("is behind: it left no flight record"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("Ranks 0, 1 wait for it in #4 AllReduce (count 1000 double sum)"), std::string::npos) << verdict;
  std::filesystem::remove_all(dir);
}

// Rank 1 skips the third of five AllReduces whose counts differ, so its third call meets the
// others' third with another count: every rank fails with the mismatch, and cfx-doctor names the
// operation and the odd rank out from the files.
TEST(Flight, SkippedCollectiveIsNamedByTheDoctor) {
  const std::string dir = dumpDir();
  ASSERT_FALSE(dir.empty());
  RunOptions o;
  o.env = {"CFX_TIMEOUT=5", "CFX_DEBUG_DUMP_DIR=" + dir};
  runRanks(3, [&](Rank& rk) {
    std::vector<float> a(200, 1.0f), b(200);
    cfxResult_t r = cfxSuccess;
    for (int i = 0; i < 5 && r == cfxSuccess; ++i) {
      if (rk.rank == 1 && i == 2) continue;
      r = cfxAllReduce(a.data(), b.data(), 100 + i, cfxFloat32, cfxSum, rk.comm, nullptr);
    }
    EXPECT_NE(r, cfxSuccess);
    EXPECT_NE(std::string(cfxGetLastError(rk.comm)).find("mismatch"), std::string::npos) << cfxGetLastError(rk.comm);
  }, o);
  if (isRankProcess()) return;
  std::string verdict = doctor(dir);
  std::printf("cfx-doctor said:\n%s", verdict.c_str());
  EXPECT_NE(verdict.find("Mismatched calls at operation #3"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("ranks 0, 2 called #3 AllReduce (count 102 float sum)"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("rank 1 called #3 AllReduce (count 103 float sum)"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("Rank 1 is the odd one out"), std::string::npos) << verdict;
  std::filesystem::remove_all(dir);
}

// Small grouped Send/Recv run on the caller's stack (Engine::runQuick) are recorded like any
// operation: three exchanges around a ring of 3, then rank 2 leaves. Rank 0's fourth receive
// (from rank 2) fails, and its dump holds its four sends done, three receives done and the fourth
// failed.
TEST(Flight, QuickSendRecvAreRecorded) {
  const std::string dir = dumpDir();
  ASSERT_FALSE(dir.empty());
  RunOptions o;
  o.env = {"CFX_TIMEOUT=3", "CFX_DEBUG_DUMP_DIR=" + dir};
  runRanks(3, [&](Rank& rk) {
    const int next = (rk.rank + 1) % 3, prev = (rk.rank + 2) % 3;
    double out = rk.rank, in = -1;
    const int calls = rk.rank == 2 ? 3 : 4;
    cfxResult_t r = cfxSuccess;
    for (int i = 0; i < calls && r == cfxSuccess; ++i) {
      CFX_ASSERT_OK(cfxGroupStart());
      CFX_ASSERT_OK(cfxSend(&out, 1, cfxFloat64, next, rk.comm, nullptr));
      CFX_ASSERT_OK(cfxRecv(&in, 1, cfxFloat64, prev, rk.comm, nullptr));
      r = cfxGroupEnd();
    }
    if (rk.rank != 0) return;
    EXPECT_TRUE(r == cfxRemoteError || r == cfxTimeout) << cfxGetLastError(rk.comm);
    const std::string dump = readFile(ownDumpFile(dir));
    for (int seq = 1; seq <= 4; ++seq) {
      const std::string send = "\"seq\": " + std::to_string(seq) + ", \"op\": \"Send\", \"p2p\": true, \"count\": 8, " +
                               "\"peer\": 1, \"state\": \"done\"";
      EXPECT_NE(dump.find(send), std::string::npos) << send << " not in " << dump;
      const std::string recv = "\"seq\": " + std::to_string(seq) + ", \"op\": \"Recv\", \"p2p\": true, \"count\": 8, " +
                               "\"peer\": 2, \"state\": \"" + (seq < 4 ? "done" : "failed") + "\"";
      EXPECT_NE(dump.find(recv), std::string::npos) << recv << " not in " << dump;
    }
  }, o);
  if (!isRankProcess()) std::filesystem::remove_all(dir);
}

// Small collectives outside a group run as values on the caller's stack (Engine::runQuick) and are
// recorded like any operation, including Broadcast's root, which returns before its readers: three
// Broadcasts from rank 0 and an AllReduce on 3 ranks, then rank 2 leaves and the next AllReduce
// fails. Rank 0's dump holds the first four done and the fifth failed.
TEST(Flight, QuickCollectivesAreRecorded) {
  const std::string dir = dumpDir();
  ASSERT_FALSE(dir.empty());
  RunOptions o;
  o.env = {"CFX_TIMEOUT=3", "CFX_DEBUG_DUMP_DIR=" + dir};
  runRanks(3, [&](Rank& rk) {
    float in[2] = {1.0f * rk.rank, 2.0f}, out[2] = {-1, -1};
    for (int i = 0; i < 3; ++i) CFX_ASSERT_OK(cfxBroadcast(in, out, 2, cfxFloat32, 0, rk.comm, nullptr));
    EXPECT_EQ(out[0], 0.0f);
    CFX_ASSERT_OK(cfxAllReduce(in, out, 2, cfxFloat32, cfxSum, rk.comm, nullptr));
    EXPECT_EQ(out[0], 3.0f);
    if (rk.rank == 2) return;
    const cfxResult_t r = cfxAllReduce(in, out, 2, cfxFloat32, cfxSum, rk.comm, nullptr);
    if (rk.rank != 0) return;
    EXPECT_TRUE(r == cfxRemoteError || r == cfxTimeout) << cfxGetLastError(rk.comm);
    const std::string dump = readFile(ownDumpFile(dir));
    for (int seq = 1; seq <= 5; ++seq) {
      const std::string op = seq <= 3 ? "\"op\": \"Broadcast\", \"p2p\": false, \"count\": 2, \"datatype\": \"float\", \"root\": 0"
                                      : "\"op\": \"AllReduce\", \"p2p\": false, \"count\": 2, \"datatype\": \"float\", \"redop\": \"sum\"";
      const std::string rec = "\"seq\": " + std::to_string(seq) + ", " + op + ", \"state\": \"" + (seq < 5 ? "done" : "failed") + "\"";
      EXPECT_NE(dump.find(rec), std::string::npos) << rec << " not in " << dump;
    }
  }, o);
  if (!isRankProcess()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cfxtest
