// The fault campaign (issue #17): many short real jobs, each with a random layout, a random loop
// of collectives and at most one random fault (tests/campaign/job.h). For each job it checks that
//   - a clean job gives exact results on every rank;
//   - after a fault every surviving rank returns an error, within CFX_TIMEOUT + 5 s of its call,
//     naming the failing rank (or the mismatch), and no process hangs;
//   - nothing is left in /dev/shm and no process outlives the job.
// Every failure prints its seed and the command that reproduces it.
//
//   campaign [--runs N] [--seed S] [--timeout SECONDS] [--results FILE] [--verbose] [--worker PATH]
//            [--only FAULT]   (FAULT as job.cc names it, e.g. "SIGKILL": the other seeds are skipped)
#include <dirent.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "campaign/job.h"
#include "conflux/conflux.h"

extern char** environ;

namespace cfxcampaign {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t seed = 0;
  int runs = 100;
  int timeout = 2;  // CFX_TIMEOUT of every job
  std::string results;
  std::string worker;
  std::string only;  // run only the jobs with this fault (faultName), skipping the other seeds
  bool verbose = false;
};

struct Totals {
  int runs = 0, passed = 0, hangs = 0, wrong = 0, noError = 0, unnamed = 0, slow = 0, leftovers = 0, outlived = 0,
      crashed = 0;  // crashed: a rank killed by a signal it was not meant to get, or exiting non-zero
  long worstMs = 0;
  std::string worstJob;
  std::map<std::string, int> byFault;
  std::vector<std::string> failures;
};

std::set<std::string> shmEntries() {
  std::set<std::string> out;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, "cfx-", 4) == 0) out.insert(e->d_name);
    }
    closedir(d);
  }
  return out;
}

std::string hexId(const cfxUniqueId& id) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : id.internal) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

pid_t spawn(const Options& o, const Job& job, int rank, const std::string& id, const std::string& dir, pid_t pgid,
            const std::string& shmDir) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "CFX_", 4) != 0) env.emplace_back(*e);
  }
  env.push_back("CFX_UNIQUE_ID=" + id);
  env.push_back("CFX_RANK=" + std::to_string(rank));
  env.push_back("CFX_NRANKS=" + std::to_string(job.nranks));
  env.push_back("CFX_TIMEOUT=" + std::to_string(o.timeout));
  env.push_back(std::string("CFX_DEBUG=") + (o.verbose ? "WARN" : "NONE"));
  if (!shmDir.empty()) env.push_back("CFX_SHM_DIR=" + shmDir);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string seed = std::to_string(job.seed);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, pgid);
    char* argv[] = {const_cast<char*>(o.worker.c_str()), seed.data(), const_cast<char*>(dir.c_str()), nullptr};
    execve(o.worker.c_str(), argv, envp.data());
    _exit(127);
  }
  setpgid(pid, pgid == 0 ? pid : pgid);
  return pid;
}

// What a hung rank is doing: whether it reported already (then it hangs after its last call, e.g.
// in cfxCommDestroy), its state, and where each of its threads sleeps in the kernel.
std::string whereIs(pid_t pid, const std::string& dir, int rank) {
  std::string out;
  std::ifstream result(dir + "/rank" + std::to_string(rank));
  std::string line;
  out += std::getline(result, line) ? "after reporting '" + line.substr(0, 160) + "'" : "before reporting";
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  while (std::getline(status, line)) {
    if (line.rfind("State:", 0) == 0) out += "; " + line;
  }
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream comm(t.path() / "comm"), wchan(t.path() / "wchan");
    std::string c, w;
    std::getline(comm, c);
    std::getline(wchan, w);
    out += "; thread " + t.path().filename().string() + " (" + c + ") in " + (w.empty() ? "?" : w);
  }
  return out;
}

// Where a hung rank's threads are, when gdb is there to say (printed, not kept in the totals).
void printStacks(pid_t pid, int rank) {
  if (access("/usr/bin/gdb", X_OK) != 0) return;
  std::string cmd = "/usr/bin/gdb -p " + std::to_string(pid) + " -batch -ex 'thread apply all bt 16' 2>/dev/null";
  std::printf("---- stacks of hung rank %d (pid %d) ----\n", rank, static_cast<int>(pid));
  std::fflush(stdout);
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) std::fwrite(buf, 1, n, stdout);
    pclose(p);
  }
}

// Reaps whatever has exited: the job's ranks (their status is kept) and orphans reparented to us
// (we are a subreaper), such as the SIGSTOP helper. One reaper for both: a waitpid(-1) for the
// orphans would otherwise reap a rank too, which then looks as if it never exited.
int reapAll(const std::vector<pid_t>& pids, std::vector<int>& status, std::vector<bool>& reaped) {
  int n = 0;
  for (;;) {
    int st = 0;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p <= 0) return n;
    auto it = std::find(pids.begin(), pids.end(), p);
    if (it == pids.end()) continue;
    status[it - pids.begin()] = st;
    reaped[it - pids.begin()] = true;
    ++n;
  }
}

void runJob(const Options& o, uint64_t seed, Totals& t) {
  Job job = Job::fromSeed(seed);
  // Shared memory too small: a 1 MiB tmpfs as the ranks' CFX_SHM_DIR (root only; else a clean job).
  std::string shmDir;
  if (job.fault == Fault::kShmFull) {
    char tiny[] = "/tmp/cfx-campaign-shm-XXXXXX";
    shmDir = mkdtemp(tiny);
    if (mount("tmpfs", shmDir.c_str(), "tmpfs", 0, "size=1m") != 0) {
      rmdir(shmDir.c_str());
      shmDir.clear();
      job.fault = Fault::kNone;
    }
  }
  const std::string what = job.describe();
  std::vector<std::string> problems;
  auto fail = [&](const std::string& why) { problems.push_back(why); };

  const std::set<std::string> shmBefore = shmEntries();
  char tmpl[] = "/tmp/cfx-campaign-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  cfxUniqueId uid;
  if (cfxGetUniqueId(&uid) != cfxSuccess) {
    fail(std::string("cfxGetUniqueId: ") + cfxGetLastError(nullptr));
    return;
  }
  const std::string id = hexId(uid);
  std::vector<pid_t> pids;
  for (int r = 0; r < job.nranks; ++r) pids.push_back(spawn(o, job, r, id, dir, r == 0 ? 0 : pids[0], shmDir));
  const pid_t pgid = pids[0];

  // A stopped rank is continued CFX_TIMEOUT + 2 s after it stops; the others need CFX_TIMEOUT to
  // fail. A job still running after CFX_TIMEOUT + 25 s hangs.
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout + 25);
  std::vector<int> status(job.nranks, 0);
  std::vector<bool> reaped(job.nranks, false);
  bool hung = false;
  for (int left = job.nranks; left > 0;) {
    left -= reapAll(pids, status, reaped);
    if (left == 0) break;
    if (Clock::now() > deadline) {
      hung = true;
      for (int r = 0; r < job.nranks; ++r) {
        if (reaped[r]) continue;
        fail("hang: rank " + std::to_string(r) + " still running: " + whereIs(pids[r], dir, r));
        printStacks(pids[r], r);
      }
      kill(-pgid, SIGCONT);
      kill(-pgid, SIGKILL);
      for (int r = 0; r < job.nranks; ++r) {
        if (!reaped[r]) waitpid(pids[r], &status[r], 0);
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (hung) ++t.hangs;
  // Nothing of the job may outlive it (the SIGSTOP helper exits right after continuing its rank).
  const auto graceEnd = Clock::now() + std::chrono::seconds(2);
  while (kill(-pgid, 0) == 0 && Clock::now() < graceEnd) {
    reapAll(pids, status, reaped);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (kill(-pgid, 0) == 0) {
    ++t.outlived;
    fail("a process of the job outlived it");
    kill(-pgid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    reapAll(pids, status, reaped);
  }

  for (int r = 0; r < job.nranks; ++r) {
    std::ifstream in(dir + "/rank" + std::to_string(r));
    std::string line;
    std::getline(in, line);
    const bool isFaulty = r == job.faultRank;
    const bool signalled = WIFSIGNALED(status[r]);
    if (signalled && !(isFaulty && job.fault == Fault::kKill) && !hung) {
      ++t.crashed;
      fail("rank " + std::to_string(r) + " died of signal " + std::to_string(WTERMSIG(status[r])));
      continue;
    }
    // A worker always exits 0; anything else is a sanitizer's report (or a crash it caught).
    if (WIFEXITED(status[r]) && WEXITSTATUS(status[r]) != 0 && !hung) {
      ++t.crashed;
      fail("rank " + std::to_string(r) + " exited with status " + std::to_string(WEXITSTATUS(status[r])) +
           " (a sanitizer's report? run it with --verbose)");
      continue;
    }
    if (job.fault == Fault::kNone) {
      if (line != "ok 0") {
        if (line.rfind("ok ", 0) == 0) ++t.wrong;
        fail("rank " + std::to_string(r) + ": " + (line.empty() ? "no result" : line));
      }
      continue;
    }
    const bool survivor = !isFaulty || job.fault == Fault::kMismatch;  // kShmFull: every rank (no faulty one)
    if (!survivor || hung) continue;
    if (line.rfind("error ", 0) != 0) {
      ++t.noError;
      if (line.rfind("ok ", 0) == 0 && line != "ok 0") ++t.wrong;
      fail("surviving rank " + std::to_string(r) + " returned no error: " + (line.empty() ? "no result" : line));
      continue;
    }
    std::istringstream ls(line.substr(6));
    int code = 0;
    long ms = 0;
    ls >> code >> ms;
    if (ms > t.worstMs) {
      t.worstMs = ms;
      t.worstJob = what;
    }
    if (ms > (o.timeout + 5) * 1000L) {
      ++t.slow;
      fail("rank " + std::to_string(r) + " took " + std::to_string(ms) + " ms to fail: " + line);
    }
    const std::string f = std::to_string(job.faultRank);
    std::string named;
    switch (job.fault) {
      case Fault::kKill:
      case Fault::kExit: named = "rank " + f; break;
      case Fault::kStop: named = "rank " + f + " (pid"; break;
      case Fault::kAbort: named = "rank " + f + " aborted"; break;
      case Fault::kMismatch:
        // A count that differs only on Send/Recv with a zero count (which sends nothing, as in
        // NCCL) cannot be seen as a mismatch: the ranks end up waiting for each other.
        named = line.find("wait for each other") != std::string::npos ? "rank " + f : "mismatch";
        break;
      case Fault::kShmFull: named = "MiB is needed"; break;
      case Fault::kNone: break;
    }
    if (line.find(named) == std::string::npos) {
      ++t.unnamed;
      fail("rank " + std::to_string(r) + "'s error does not say '" + named + "': " + line);
    }
  }

  // Shared memory of the job's communicators is gone once every rank is.
  std::set<std::string> shmAfter = shmEntries();
  for (const auto& e : shmAfter) {
    if (shmBefore.count(e) != 0) continue;
    ++t.leftovers;
    fail("left in /dev/shm: " + e);
    std::filesystem::remove(std::filesystem::path("/dev/shm") / e);
  }
  std::filesystem::remove_all(dir);
  if (!shmDir.empty()) {
    if (!std::filesystem::is_empty(shmDir)) {
      ++t.leftovers;
      fail("left in the small CFX_SHM_DIR " + shmDir);
    }
    umount(shmDir.c_str());
    rmdir(shmDir.c_str());
  }

  ++t.runs;
  ++t.byFault[faultName(job.fault)];
  if (problems.empty()) {
    ++t.passed;
    if (o.verbose) std::printf("ok   %s\n", what.c_str());
    return;
  }
  for (const auto& p : problems) {
    std::string line = "FAIL " + what + ": " + p + "\n     reproduce: campaign --runs 1 --seed " +
                       std::to_string(seed) + " --timeout " + std::to_string(o.timeout) + " --verbose";
    std::printf("%s\n", line.c_str());
    t.failures.push_back(line);
  }
  std::fflush(stdout);
}

void writeResults(const Options& o, const Totals& t, double seconds) {
  std::ofstream f(o.results);
  f << "# Fault campaign\n\n";
  f << "Command: `campaign --runs " << o.runs << " --seed " << o.seed << " --timeout " << o.timeout << "` ("
    << static_cast<int>(seconds) << " s).\n\n";
  f << "| runs | passed | hangs | wrong results | survivors without an error | errors not naming the rank |"
       " slower than CFX_TIMEOUT + 5 s | left in /dev/shm | processes outliving the job | crashes |"
       " worst time to error |\n";
  f << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  f << "| " << t.runs << " | " << t.passed << " | " << t.hangs << " | " << t.wrong << " | " << t.noError << " | "
    << t.unnamed << " | " << t.slow << " | " << t.leftovers << " | " << t.outlived << " | " << t.crashed << " | "
    << t.worstMs << " ms |\n\n";
  f << "Jobs by fault:";
  for (const auto& [k, v] : t.byFault) f << " " << k << " " << v << ";";
  f << "\n\nWorst time to error: " << t.worstJob << ".\n";
  for (const auto& l : t.failures) f << "\n    " << l << "\n";
}

int runCampaign(int argc, char** argv) {
  Options o;
  o.worker = (std::filesystem::path(argv[0]).parent_path() / "campaign_worker").string();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--runs") o.runs = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--timeout") o.timeout = std::max(1, std::atoi(next().c_str()));
    else if (a == "--results") o.results = next();
    else if (a == "--worker") o.worker = next();
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--only") o.only = next();
    else {
      std::fprintf(stderr, "usage: campaign [--runs N] [--seed S] [--timeout SECONDS] [--results FILE] [--verbose] "
                           "[--worker PATH] [--only FAULT]\n");
      return 2;
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  setenv("CFX_DEBUG", o.verbose ? "WARN" : "NONE", 1);  // the bootstrap roots run in this process
  Totals t;
  const auto t0 = Clock::now();
  for (int i = 0; i < o.runs; ++i) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(i);
    if (!o.only.empty() && o.only != faultName(Job::fromSeed(seed).fault)) continue;
    runJob(o, seed, t);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("campaign: %d runs (seeds %llu-%llu) in %.0f s: %d passed, %d hangs, %d wrong results, %d survivors "
              "without an error, %d unnamed, %d slow, %d leftovers in /dev/shm, %d outlived, %d crashes; worst time to "
              "error %ld ms\n",
              t.runs, static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.seed + o.runs - 1), secs,
              t.passed, t.hangs, t.wrong, t.noError, t.unnamed, t.slow, t.leftovers, t.outlived, t.crashed, t.worstMs);
  if (!o.results.empty()) writeResults(o, t, secs);
  return t.passed == t.runs ? 0 : 1;
}

}  // namespace
}  // namespace cfxcampaign

int main(int argc, char** argv) { return cfxcampaign::runCampaign(argc, argv); }
