// cfxrun and cfxCommInitFromEnv: environments of cfxrun, torchrun and Open MPI, output prefixes,
// failure propagation and signal forwarding without orphans.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Outcome {
  int status = -1;
  std::string out;
  double seconds = 0;
};

// Runs a shell command, capturing stdout+stderr.
Outcome shell(const std::string& cmd) {
  Outcome r;
  auto t0 = Clock::now();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.out.append(buf, n);
  r.status = pclose(p);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

int exitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

const std::string kRun = CFX_RUN_PATH;
const std::string kProg = RANK_PROG_PATH;

TEST(Cfxrun, RunsRanksWithPrefixes) {
  Outcome r = shell(kRun + " -n 5 -p " + kProg + " allreduce");
  EXPECT_EQ(exitCode(r.status), 0) << r.out;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(r.out.find("[" + std::to_string(i) + "] rank " + std::to_string(i) + "/5 ok"), std::string::npos) << r.out;
  }
}

TEST(Cfxrun, FailingRankStopsTheOthers) {
  Outcome r = shell(kRun + " -n 4 --grace 1 " + kProg + " fail 2 7");
  EXPECT_EQ(exitCode(r.status), 7) << r.out;
  EXPECT_LT(r.seconds, 10.0) << "the sleeping ranks were not stopped";
  EXPECT_NE(r.out.find("rank 2"), std::string::npos) << r.out;
}

TEST(Cfxrun, ForwardsSignalsAndLeavesNoOrphans) {
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[0]);
    execl(kRun.c_str(), kRun.c_str(), "-n", "3", kProg.c_str(), "sleep", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipefd[1]);
  // Read the three ranks' pids.
  std::set<int> pids;
  FILE* in = fdopen(pipefd[0], "r");
  int p;
  while (pids.size() < 3 && fscanf(in, " pid %d", &p) == 1) pids.insert(p);
  ASSERT_EQ(pids.size(), 3u);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  fclose(in);
  EXPECT_EQ(exitCode(status), 128 + SIGTERM);
  // The ranks die with cfxrun; give their reaping a moment (a zombie is already dead).
  auto gone = [](int rp) {
    FILE* f = fopen(("/proc/" + std::to_string(rp) + "/stat").c_str(), "r");
    if (f == nullptr) return true;
    char state = '?';
    int ignored = fscanf(f, "%*d (%*[^)]) %c", &state);
    (void)ignored;
    fclose(f);
    return state == 'Z' || state == 'X';
  };
  for (int rp : pids) {
    auto until = Clock::now() + std::chrono::seconds(5);
    while (!gone(rp) && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(gone(rp)) << "rank pid " << rp << " outlived cfxrun";
  }
}

TEST(Cfxrun, UsageErrors) {
  EXPECT_EQ(exitCode(shell(kRun + " -n 0 " + kProg).status), 2);
  EXPECT_EQ(exitCode(shell(kRun + " -n 2").status), 2);
}

// Launches n copies of rank_prog with per-rank environment prefixes (launcher emulation).
Outcome launchWithEnv(int n, const std::function<std::string(int)>& envOf) {
  std::string cmd = "( ";
  for (int r = 0; r < n; ++r) cmd += "env " + envOf(r) + " " + kProg + " allreduce & ";
  cmd += "wait )";
  return shell(cmd);
}

TEST(InitFromEnv, TorchrunVariables) {
  int port = 20000 + getpid() % 20000;
  Outcome r = launchWithEnv(3, [&](int rank) {
    return "-u CFX_UNIQUE_ID -u CFX_RANK MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) +
           " RANK=" + std::to_string(rank) + " WORLD_SIZE=3 LOCAL_RANK=" + std::to_string(rank);
  });
  for (int i = 0; i < 3; ++i) EXPECT_NE(r.out.find("rank " + std::to_string(i) + "/3 ok"), std::string::npos) << r.out;
}

TEST(InitFromEnv, OpenMpiVariablesOnOneHost) {
  std::string job = std::to_string(getpid());
  Outcome r = launchWithEnv(4, [&](int rank) {
    return "-u CFX_UNIQUE_ID -u CFX_RANK -u MASTER_ADDR OMPI_COMM_WORLD_RANK=" + std::to_string(rank) +
           " OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_SIZE=4 OMPI_MCA_ess_base_jobid=" + job;
  });
  for (int i = 0; i < 4; ++i) EXPECT_NE(r.out.find("rank " + std::to_string(i) + "/4 ok"), std::string::npos) << r.out;
}

TEST(InitFromEnv, NoLauncherIsAClearError) {
  Outcome r = shell("env -u CFX_UNIQUE_ID -u CFX_RANK -u RANK -u OMPI_COMM_WORLD_RANK -u SLURM_PROCID -u PMI_RANK " + kProg);
  EXPECT_NE(exitCode(r.status), 0);
  EXPECT_NE(r.out.find("no launcher found"), std::string::npos) << r.out;
}

}  // namespace
