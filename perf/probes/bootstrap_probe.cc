// How long the bootstrap alone takes for n ranks (issue #35 section 2): n threads of this process
// each join the root (the rank table), then run what cfxCommInitRank runs on it: two barriers,
// an all-gather of a rendezvous address, and for many hosts two more all-gathers and a barrier.
// Nothing else of init runs (no topology, no shared memory), so the figure is the bootstrap's.
//
//   build/perf/bootstrap_probe --ranks 16,64,256,1024 --repeat 5
//
// Prints, per n, the median over the repeats of the slowest rank's join (until it knows the rank
// table), of the whole bootstrap, and of the CPU time of the root, which runs in a process of its
// own (as it does under cfxrun): the root is the one process every rank talks to, so its share is
// what grows in series with n. All ranks share this machine's cores, so the times measure the
// total work of the protocol more than its latency at scale: docs/scaling.md carries the model.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/client.h"
#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"

using conflux::bootstrap::Client;
using Clock = std::chrono::steady_clock;

namespace {

struct Times {
  double join = 0;
  double total = 0;
  double rootCpu = 0;
};

// Starts the root in a child process; returns its pid and sets `id`.
pid_t rootProcess(conflux::bootstrap::UniqueIdData& id) {
  id.secret = conflux::bootstrap::randomSecret();
  int fds[2];
  if (pipe(fds) != 0) std::exit(2);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    conflux::net::SockAddr a = conflux::bootstrap::startRoot(conflux::net::SockAddr::parse("127.0.0.1:0"), id.secret,
                                                             std::chrono::seconds(120));
    int port = a.port();
    if (write(fds[1], &port, sizeof(port)) != sizeof(port)) _exit(2);
    for (;;) pause();  // until the probe ends it
  }
  close(fds[1]);
  int port = 0;
  if (read(fds[0], &port, sizeof(port)) != sizeof(port)) std::exit(2);
  close(fds[0]);
  id.root = conflux::net::SockAddr::parse("127.0.0.1:" + std::to_string(port));
  return pid;
}

Times once(int n) {
  conflux::bootstrap::UniqueIdData id;
  const pid_t root = rootProcess(id);
  std::vector<double> join(n), total(n);
  std::atomic<int> failures{0};
  const auto start = Clock::now();
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      try {
        Client c = Client::join(id, n, r, std::chrono::seconds(120));
        join[r] = std::chrono::duration<double>(Clock::now() - start).count();
        const std::string address = "10.0.0." + std::to_string(r % 250) + ":" + std::to_string(20000 + r);
        c.barrier({}).raise();
        c.barrier({}).raise();
        c.exchange(address);
        c.exchange(address + ",1");
        c.exchange(address + ",2");
        c.barrier({}).raise();
        c.finish();
        total[r] = std::chrono::duration<double>(Clock::now() - start).count();
      } catch (const std::exception& e) {
        if (failures++ == 0) std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
    });
  }
  for (auto& t : ranks) t.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the root reads the last goodbyes
  kill(root, SIGKILL);
  rusage ru{};
  int status = 0;
  wait4(root, &status, 0, &ru);
  if (failures > 0) std::exit(1);
  const double cpu = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  return Times{*std::max_element(join.begin(), join.end()), *std::max_element(total.begin(), total.end()), cpu};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string list = "16,64,256";
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ranks") list = argv[i + 1];
    if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  std::printf("| ranks | join, slowest rank (ms) | bootstrap, slowest rank (ms) | root process CPU (ms) |\n"
              "|---|---|---|---|\n");
  for (size_t pos = 0; pos < list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const int n = std::atoi(list.substr(pos, comma - pos).c_str());
    pos = comma + 1;
    std::vector<double> joins, totals, cpus;
    for (int k = 0; k < repeat; ++k) {
      Times t = once(n);
      joins.push_back(t.join * 1e3);
      totals.push_back(t.total * 1e3);
      cpus.push_back(t.rootCpu * 1e3);
    }
    std::printf("| %d | %.1f | %.1f | %.1f |\n", n, median(joins), median(totals), median(cpus));
    std::fflush(stdout);
  }
  return 0;
}
