#include "harness.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

extern char** environ;

namespace cfxtest {

namespace {

std::string hexId(const cfxUniqueId& id) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : id.internal) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

std::string currentTestFilter() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "." + info->name();
}

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "/proc/self/exe";
  buf[n] = '\0';
  return buf;
}

void runAsRank(const std::function<void(Rank&)>& body, const RunOptions& opts) {
  Rank r{std::atoi(std::getenv("CFX_RANK")), std::atoi(std::getenv("CFX_NRANKS")), nullptr};
  if (opts.initComm) {
    ASSERT_EQ(cfxCommInitFromEnv(&r.comm), cfxSuccess) << cfxGetLastError(nullptr);
  }
  body(r);
  if (r.comm != nullptr) {
    EXPECT_EQ(cfxCommDestroy(r.comm), cfxSuccess) << cfxGetLastError(nullptr);
  }
}

}  // namespace

bool isRankProcess() { return std::getenv("CFX_TEST_RANK_PROCESS") != nullptr; }

void runRanks(int nranks, const std::function<void(Rank&)>& body, const RunOptions& opts) {
  if (isRankProcess()) {
    runAsRank(body, opts);
    return;
  }
  cfxUniqueId id;
  ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess) << cfxGetLastError(nullptr);
  std::string exe = selfExe();
  std::string filter = "--gtest_filter=" + currentTestFilter();
  std::vector<pid_t> pids;
  const pid_t parent = getpid();
  for (int r = 0; r < nranks; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("CFX_TEST_RANK_PROCESS=1");
    env.push_back("CFX_UNIQUE_ID=" + hexId(id));
    env.push_back("CFX_RANK=" + std::to_string(r));
    env.push_back("CFX_NRANKS=" + std::to_string(nranks));
    env.push_back("CFX_LOCAL_RANK=" + std::to_string(r));
    for (const auto& e : opts.env) env.push_back(e);
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string brief = "--gtest_brief=1";
    char* argv[] = {exe.data(), filter.data(), brief.data(), nullptr};
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);
      execve(exe.c_str(), argv, envp.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opts.deadlineSeconds);
  std::vector<int> status(nranks, -1);
  int left = nranks;
  while (left > 0) {
    for (int r = 0; r < nranks; ++r) {
      if (status[r] != -1) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = st;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < nranks; ++r) {
        if (status[r] == -1) kill(pids[r], SIGKILL);
      }
      for (int r = 0; r < nranks; ++r) {
        if (status[r] == -1) waitpid(pids[r], &status[r], 0);
      }
      FAIL() << "ranks overran the " << opts.deadlineSeconds << " s deadline (a hang)";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int r = 0; r < nranks; ++r) {
    if (opts.expectKilled.count(r)) {
      EXPECT_TRUE(WIFSIGNALED(status[r])) << "rank " << r << " was expected to be killed";
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)
        << "rank " << r << " of " << nranks << " failed: "
        << (WIFSIGNALED(status[r]) ? "killed by signal " + std::to_string(WTERMSIG(status[r]))
                                   : "exit status " + std::to_string(WEXITSTATUS(status[r])));
  }
}

}  // namespace cfxtest
