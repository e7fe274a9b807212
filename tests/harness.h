// Multi-process test harness (in the spirit of Gloo's MultiProcTest). A test calls
//
//   runRanks(n, [](Rank& r) { ... assertions ... });
//
// In the test process this starts a bootstrap root, then re-executes the test binary n times,
// each running only the current test with CFX_UNIQUE_ID/CFX_RANK/CFX_NRANKS set; there the same
// call initialises a communicator with cfxCommInitFromEnv and runs the body. Ranks are real
// processes talking through real shared memory. The parent fails the test if any rank fails
// (unless the test said it expects that rank to be killed) or if the ranks overrun a deadline.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace cfxtest {

struct Rank {
  int rank;
  int nranks;
  cfxComm_t comm;
};

struct RunOptions {
  std::set<int> expectKilled;     // ranks that are meant to die by a signal
  int deadlineSeconds = 240;      // the whole run, in the parent
  bool initComm = true;           // false: the body creates communicators itself
  std::vector<std::string> env;   // extra NAME=VALUE for every rank
};

void runRanks(int nranks, const std::function<void(Rank&)>& body, const RunOptions& opts = {});

// Several hosts (tests/netns/hosts.sh sets CFX_TEST_HOSTS="ns:ip:ranks ns:ip:ranks ..."): ranks
// are placed host by host, each started inside its host's network namespace ("-": no namespace,
// the host told apart by CFX_HOST_ID), and find the bootstrap root at the first host's address.
struct HostSlot {
  std::string netns;
  std::string ip;
  int ranks;
};
std::vector<HostSlot> testHosts();
// The total ranks of the layout, or 0 when no layout is set.
int layoutRanks();

// True inside a rank process.
bool isRankProcess();

// Checks a Conflux call inside a rank, printing cfxGetLastError on failure.
#define CFX_ASSERT_OK(call)                                                     \
  do {                                                                          \
    cfxResult_t cfx_r_ = (call);                                                \
    ASSERT_EQ(cfx_r_, cfxSuccess) << #call << ": " << cfxGetLastError(nullptr); \
  } while (0)

}  // namespace cfxtest
