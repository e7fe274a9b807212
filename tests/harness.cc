#include "harness.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

std::vector<HostSlot> testHosts() {
  std::vector<HostSlot> out;
  const char* spec = std::getenv("CFX_TEST_HOSTS");
  if (spec == nullptr) return out;
  std::string s = spec;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(' ', pos);
    std::string item = s.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? s.size() : end + 1;
    if (item.empty()) continue;
    size_t a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b) continue;
    out.push_back(HostSlot{item.substr(0, a), item.substr(a + 1, b - a - 1), std::atoi(item.c_str() + b + 1)});
  }
  return out;
}

int layoutRanks() {
  int n = 0;
  for (const auto& h : testHosts()) n += h.ranks;
  return n;
}

bool isRankProcess() { return std::getenv("CFX_TEST_RANK_PROCESS") != nullptr; }

namespace {

// A port for the bootstrap root of a hosts layout: below the kernel's ephemeral range (32768 and
// up), so no outgoing connection of a concurrent test can hold it, and, when the first host is
// this namespace, checked free by binding it.
int rootPort(bool checkHere) {
  const unsigned seed = getpid() * 7919u + static_cast<unsigned>(time(nullptr));
  for (unsigned k = 0; k < 64; ++k) {
    int port = 20000 + static_cast<int>((seed + k * 104729u) % 12000);
    if (!checkHere) return port;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return port;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(fd);
    if (free) return port;
  }
  return 20000;
}

}  // namespace

void runRanks(int nranks, const std::function<void(Rank&)>& body, const RunOptions& opts) {
  if (isRankProcess()) {
    runAsRank(body, opts);
    return;
  }
  const std::vector<HostSlot> hosts = testHosts();
  std::vector<int> hostOf;  // rank -> host slot, -1 without a layout
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int k = 0; k < hosts[h].ranks; ++k) hostOf.push_back(static_cast<int>(h));
  }
  if (!hosts.empty()) {
    ASSERT_EQ(static_cast<int>(hostOf.size()), nranks) << "CFX_TEST_HOSTS places " << hostOf.size() << " ranks";
  }
  cfxUniqueId id;
  std::string rootEnv;
  if (hosts.empty()) {
    ASSERT_EQ(cfxGetUniqueId(&id), cfxSuccess) << cfxGetLastError(nullptr);
    rootEnv = "CFX_UNIQUE_ID=" + hexId(id);
  } else {
    // Rank 0 runs the root inside the first host.
    rootEnv = "CFX_ROOT_ADDR=" + hosts[0].ip + ":" + std::to_string(rootPort(hosts[0].netns == "-"));
  }
  char secret[33];
  std::snprintf(secret, sizeof(secret), "%08x%08x%08x%08x", static_cast<unsigned>(getpid()),
                static_cast<unsigned>(time(nullptr)), static_cast<unsigned>(clock()), 0x5eedu);
  std::string exe = selfExe();
  std::string filter = "--gtest_filter=" + currentTestFilter();
  std::vector<pid_t> pids;
  const pid_t parent = getpid();
  std::vector<int> localRank(hosts.size(), 0);
  for (int r = 0; r < nranks; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "CFX_UNIQUE_ID=", 14) != 0) env.emplace_back(*e);
    }
    env.push_back("CFX_TEST_RANK_PROCESS=1");
    env.push_back(rootEnv);
    env.push_back("CFX_RANK=" + std::to_string(r));
    env.push_back("CFX_NRANKS=" + std::to_string(nranks));
    std::string ns;
    if (hosts.empty()) {
      env.push_back("CFX_LOCAL_RANK=" + std::to_string(r));
    } else {
      int h = hostOf[r];
      env.push_back("CFX_LOCAL_RANK=" + std::to_string(localRank[h]++));
      env.push_back(std::string("CFX_SECRET=") + secret);
      ns = hosts[h].netns;
      if (ns == "-") env.push_back("CFX_HOST_ID=test-host-" + std::to_string(h));
      if (ns == "-") ns.clear();
    }
    for (const auto& e : opts.env) env.push_back(e);
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string brief = "--gtest_brief=1";
    std::string ip = "ip", netns = "netns", execArg = "exec";
    std::vector<char*> argv;
    if (!ns.empty()) argv = {ip.data(), netns.data(), execArg.data(), ns.data()};
    argv.push_back(exe.data());
    argv.push_back(filter.data());
    argv.push_back(brief.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);
      if (ns.empty()) {
        execve(exe.c_str(), argv.data(), envp.data());
      } else {
        execvpe("ip", argv.data(), envp.data());
      }
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
