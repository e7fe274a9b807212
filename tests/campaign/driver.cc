// The fault campaign (issue #17): many short real jobs, each with a random layout, a random loop
// of collectives and at most one random fault (tests/campaign/job.h). Run inside
// tests/netns/hosts.sh with two or more hosts (CFX_TEST_HOSTS), a third of the jobs run across two
// of those namespace hosts, each rank started with `ip netns exec`. For each job it checks that
//   - a clean job gives exact results on every rank;
//   - after a fault every surviving rank returns an error, within CFX_TIMEOUT + 5 s of its call,
//     naming the failing rank (or the mismatch; for a link down, a rank across it), and no process
//     hangs;
//   - nothing is left in the job's shared-memory directory and no process outlives the job.
// Every failure prints its seed and the command that reproduces it.
//
//   campaign [--runs N] [--seed S] [--timeout SECONDS] [--results FILE] [--verbose] [--worker PATH]
//            [--only FAULT]   (FAULT as job.cc names it, e.g. "SIGKILL", or "shrink" for the jobs whose
//                              survivors shrink: the other seeds are skipped)
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

struct NsHost {
  std::string netns, ip;
};

struct Options {
  std::vector<NsHost> hosts;  // namespace hosts from tests/netns/hosts.sh; empty: one host only
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
  int acrossHosts = 0;  // jobs laid out across two namespace hosts
  int notInjected = 0;  // 'shared memory too small' drawn without root (run clean, reported)
  int shrinks = 0, shrinkFailures = 0;  // survivors that shrank after the fault, and that could not
  long worstShrinkMs = 0;
  long worstMs = 0;
  std::string worstJob;
  std::map<std::string, int> byFault;
  std::vector<std::string> failures;
};

std::string hexId(const cfxUniqueId& id) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : id.internal) {
    s += kDigits[c >> 4];
    s += kDigits[c & 15];
  }
  return s;
}

// The hosts.sh layout in CFX_TEST_HOSTS ("ns:ip:ranks ..."), when it has two namespace hosts.
std::vector<NsHost> namespaceHosts() {
  std::vector<NsHost> out;
  const char* spec = std::getenv("CFX_TEST_HOSTS");
  std::istringstream in(spec == nullptr ? "" : spec);
  std::string item;
  while (in >> item) {
    size_t a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b || item.substr(0, a) == "-") return {};
    out.push_back(NsHost{item.substr(0, a), item.substr(a + 1, b - a - 1)});
  }
  if (out.size() < 2) return {};
  out.resize(2);
  return out;
}

// How the ranks of a job find each other: a unique id from this process's bootstrap root on one
// host; across namespace hosts, a root that rank 0 runs inside the first host, at a port below the
// ephemeral range drawn from the seed, with a secret of the job's own.
std::vector<std::string> rendezvous(const Options& o, const Job& job, const std::string& id) {
  if (job.hosts == 1) return {"CFX_UNIQUE_ID=" + id};
  const int port = 20000 + static_cast<int>((job.seed * 104729u + static_cast<uint64_t>(getpid())) % 12000);
  return {"CFX_ROOT_ADDR=" + o.hosts[0].ip + ":" + std::to_string(port), "CFX_SECRET=" + id.substr(0, 32)};
}

pid_t spawn(const Options& o, const Job& job, int rank, const std::string& id, const std::string& dir, pid_t pgid,
            const std::string& shmDir) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "CFX_", 4) != 0) env.emplace_back(*e);
  }
  for (auto& e : rendezvous(o, job, id)) env.push_back(e);
  if (job.hosts == 2) env.push_back("CFX_LOCAL_RANK=" + std::to_string(job.localRank(rank)));
  env.push_back("CFX_RANK=" + std::to_string(rank));
  env.push_back("CFX_NRANKS=" + std::to_string(job.nranks));
  env.push_back("CFX_TIMEOUT=" + std::to_string(o.timeout));
  env.push_back(std::string("CFX_DEBUG=") + (o.verbose ? "WARN" : "NONE"));
  env.push_back("CFX_SHM_DIR=" + shmDir);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string seed = std::to_string(job.seed), hostsArg = "hosts";
  std::string ip = "/usr/sbin/ip", netns = "netns", exec = "exec";
  std::vector<char*> argv;
  if (job.hosts == 2) {
    if (access(ip.c_str(), X_OK) != 0) ip = "/sbin/ip";
    argv = {ip.data(), netns.data(), exec.data(), const_cast<char*>(o.hosts[job.hostOf(rank)].netns.c_str())};
  }
  argv.push_back(const_cast<char*>(o.worker.c_str()));
  argv.push_back(seed.data());
  argv.push_back(const_cast<char*>(dir.c_str()));
  if (!o.hosts.empty()) argv.push_back(hostsArg.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, pgid);
    execve(argv[0], argv.data(), envp.data());
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

// Whether `line` names rank `r` as a word ("rank 2", not "rank 21").
bool namesRank(const std::string& line, int r) {
  const std::string w = "rank " + std::to_string(r);
  for (size_t at = line.find(w); at != std::string::npos; at = line.find(w, at + 1)) {
    const size_t end = at + w.size();
    if (end == line.size() || !std::isdigit(static_cast<unsigned char>(line[end]))) return true;
  }
  return false;
}

// What a survivor's error must say: every entry is a list of alternatives, one of which must
// appear. Empty when anything will do.
std::vector<std::vector<std::string>> mustName(const Job& job, int rank, const std::string& line) {
  const std::string f = std::to_string(job.faultRank);
  const std::string fr = "rank " + f;
  switch (job.fault) {
    case Fault::kKill:
    case Fault::kExit: return {{fr}};
    // Across hosts no process state can be read: the rank that timed out names whom it waited for.
    case Fault::kStop: return {{job.hostOf(job.faultRank) == job.hostOf(rank) ? fr + " (pid" : fr}};
    case Fault::kAbort:  // across hosts: "rank F (host H ...) failed: it aborted its communicator"
      if (line.find(fr + " (host") != std::string::npos && line.find("aborted") != std::string::npos) return {};
      return {{fr + " aborted"}};
    case Fault::kMismatch:
    case Fault::kMismatchColl: {
      // The mismatch (or, where ranks are left waiting for each other, that cycle), the rank that
      // made the different call, and the operation. A count that differs only on Send/Recv with
      // a zero count (which sends nothing, as in NCCL) cannot be seen as a mismatch: the ranks end
      // up waiting for each other (on one host the message reports that cycle; across hosts the
      // chain), naming the rank.
      const Step st = job.step(job.faultStep);
      const bool zeroP2p = st.coll == Coll::kSendRecv && st.count == 0;
      std::vector<std::string> op;
      if (st.coll == Coll::kSendRecv) {
        op = {"send/recv", "Send", "Recv", "receive"};
      } else {
        op = {collName(st.coll)};
        if (job.fault == Fault::kMismatchColl) op.push_back(collName(st.coll == Coll::kAllReduce ? Coll::kAllGather : Coll::kAllReduce));
      }
      if (zeroP2p) return {{fr}, op};
      return {{"mismatch", "wait for each other"}, {fr}, op};
    }
    case Fault::kShmFull: return {{"MiB is needed"}};
    case Fault::kLinkDown: {  // any rank across the link
      std::vector<std::string> across;
      for (int k = 0; k < job.nranks; ++k) {
        if (job.hostOf(k) != job.hostOf(rank)) across.push_back("rank " + std::to_string(k));
      }
      return {across};
    }
    case Fault::kNone: break;
  }
  return {};
}

// The first requirement `line` does not meet, in words ("" when it meets all).
std::string unmet(const std::vector<std::vector<std::string>>& must, const std::string& line) {
  for (const auto& anyOf : must) {
    bool met = false;
    for (const auto& w : anyOf) {
      met = met || (w.rfind("rank ", 0) == 0 && w.find_first_not_of("0123456789", 5) == std::string::npos
                        ? namesRank(line, std::stoi(w.substr(5)))
                        : line.find(w) != std::string::npos);
    }
    if (met) continue;
    std::string words;
    for (const auto& w : anyOf) words += (words.empty() ? "'" : " or '") + w + "'";
    return words;
  }
  return "";
}

// Sets the namespace hosts' links up again after a job that set one down.
void restoreLinks(const Options& o) {
  for (const auto& h : o.hosts) {
    const std::string cmd = "ip -n " + h.netns + " link set cfx0 up";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "campaign: '%s' failed\n", cmd.c_str());
  }
}

void runJob(const Options& o, uint64_t seed, Totals& t) {
  Job job = Job::fromSeed(seed, !o.hosts.empty());
  // The job's shared memory lives in a directory of its own (CFX_SHM_DIR), so what it leaves
  // behind is told apart from the segments of anything running beside the campaign (CTest runs
  // tests in parallel), and nothing of theirs is ever removed. Shared memory too small: that
  // directory is a 1 MiB tmpfs (root only; else a clean job).
  char shmTmpl[] = "/dev/shm/campaign-XXXXXX";
  const char* made = mkdtemp(shmTmpl);
  if (made == nullptr) {
    std::printf("FAIL seed %llu: cannot make a directory in /dev/shm: %s\n", static_cast<unsigned long long>(seed),
                std::strerror(errno));
    t.failures.push_back("no directory in /dev/shm");
    return;
  }
  const std::string shmDir = made;
  bool mounted = false;
  if (job.fault == Fault::kShmFull && geteuid() != 0) {
    // Mounting needs root: such a job runs clean, counted and reported apart (never as passed).
    job.fault = Fault::kNone;
    ++t.notInjected;
  } else if (job.fault == Fault::kShmFull) {
    mounted = mount("tmpfs", shmDir.c_str(), "tmpfs", 0, "size=1m") == 0;
    if (!mounted) {  // as root, a drawn fault that cannot be injected fails the job: never run clean instead
      const int err = errno;
      std::printf("FAIL seed %llu: cannot inject 'shared memory too small' (mount of a 1 MiB tmpfs: %s)\n",
                  static_cast<unsigned long long>(seed), std::strerror(err));
      t.failures.push_back("could not inject a drawn fault: mount: " + std::string(std::strerror(err)));
      std::filesystem::remove_all(shmDir);
      return;
    }
  }
  const std::string what = job.describe();
  std::vector<std::string> problems;
  auto fail = [&](const std::string& why) { problems.push_back(why); };

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
  if (job.fault == Fault::kLinkDown) restoreLinks(o);

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
    // kShmFull: every rank (no faulty one); kLinkDown: the rank that set its link down as well.
    const bool survivor = !isFaulty || job.fault == Fault::kMismatch || job.fault == Fault::kMismatchColl ||
                          job.fault == Fault::kLinkDown;
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
    if (const std::string missing = unmet(mustName(job, r, line), line); !missing.empty()) {
      ++t.unnamed;
      fail("rank " + std::to_string(r) + "'s error does not say " + missing + ": " + line);
    }
    if (job.shrinks()) {
      // Then it shrank without the faulty rank, alone, and the new communicator was exact.
      std::string second;
      std::getline(in, second);
      const std::string want = "shrink ok ";
      const std::string excluded = " excluded " + std::to_string(job.faultRank);
      if (second.rfind(want, 0) != 0 || second.size() < excluded.size() ||
          second.compare(second.size() - excluded.size(), excluded.size(), excluded) != 0) {
        ++t.shrinkFailures;
        fail("rank " + std::to_string(r) + " did not shrink without rank " + std::to_string(job.faultRank) + ": " +
             (second.empty() ? "no shrink reported" : second));
      } else {
        ++t.shrinks;
        t.worstShrinkMs = std::max(t.worstShrinkMs, std::atol(second.c_str() + want.size()));
      }
    }
  }

  // Shared memory of the job's communicators is gone once every rank is.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(shmDir, ec)) {
    ++t.leftovers;
    fail("left in shared memory (CFX_SHM_DIR " + shmDir + "): " + e.path().filename().string());
  }
  std::filesystem::remove_all(dir);
  if (mounted) umount(shmDir.c_str());
  std::filesystem::remove_all(shmDir, ec);

  ++t.runs;
  ++t.byFault[faultName(job.fault)];
  t.acrossHosts += job.hosts == 2;
  if (problems.empty()) {
    ++t.passed;
    if (o.verbose) std::printf("ok   %s\n", what.c_str());
    return;
  }
  for (const auto& p : problems) {
    std::string line = "FAIL " + what + ": " + p + "\n     reproduce: " +
                       (o.hosts.empty() ? "" : "tests/netns/hosts.sh --layout 2,2 -- ") + "campaign --runs 1 --seed " +
                       std::to_string(seed) + " --timeout " + std::to_string(o.timeout) + " --verbose";
    std::printf("%s\n", line.c_str());
    t.failures.push_back(line);
  }
  std::fflush(stdout);
}

void writeResults(const Options& o, const Totals& t, double seconds) {
  std::ofstream f(o.results);
  f << "# Fault campaign\n\n";
  f << "Command: `" << (o.hosts.empty() ? "" : "tests/netns/hosts.sh --layout 2,2 -- ") << "campaign --runs " << o.runs << " --seed " << o.seed << " --timeout " << o.timeout << "` ("
    << static_cast<int>(seconds) << " s).\n\n";
  f << "| runs | passed | hangs | wrong results | survivors without an error | errors not naming the rank |"
       " slower than CFX_TIMEOUT + 5 s | left in shared memory | processes outliving the job | crashes |"
       " worst time to error |\n";
  f << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  f << "| " << t.runs << " | " << t.passed << " | " << t.hangs << " | " << t.wrong << " | " << t.noError << " | "
    << t.unnamed << " | " << t.slow << " | " << t.leftovers << " | " << t.outlived << " | " << t.crashed << " | "
    << t.worstMs << " ms |\n\n";
  f << "Jobs by fault:";
  for (const auto& [k, v] : t.byFault) f << " " << k << " " << v << ";";
  f << "\n\nJobs across two namespace hosts: " << t.acrossHosts << ".\n";
  f << "\nWorst time to error: " << t.worstJob << ".\n";
  f << "\nSurvivors that shrank after a rank was killed or exited: " << t.shrinks << " (failed: " << t.shrinkFailures
    << "; slowest shrink " << t.worstShrinkMs << " ms).\n";
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
  o.hosts = namespaceHosts();
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  setenv("CFX_DEBUG", o.verbose ? "WARN" : "NONE", 1);  // the bootstrap roots run in this process
  Totals t;
  const auto t0 = Clock::now();
  for (int i = 0; i < o.runs; ++i) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(i);
    const Job drawn = Job::fromSeed(seed, !o.hosts.empty());
    if (!o.only.empty() && o.only != faultName(drawn.fault) && !(o.only == "shrink" && drawn.shrinks())) continue;
    runJob(o, seed, t);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("campaign: %d runs (seeds %llu-%llu) in %.0f s: %d passed, %d hangs, %d wrong results, %d survivors "
              "without an error, %d unnamed, %d slow, %d leftovers in shared memory, %d outlived, %d crashes; worst time to "
              "error %ld ms; %d jobs across two hosts; %d survivors shrank (%d could not, slowest %ld ms)\n",
              t.runs, static_cast<unsigned long long>(o.seed), static_cast<unsigned long long>(o.seed + o.runs - 1), secs,
              t.passed, t.hangs, t.wrong, t.noError, t.unnamed, t.slow, t.leftovers, t.outlived, t.crashed, t.worstMs, t.acrossHosts,
              t.shrinks, t.shrinkFailures, t.worstShrinkMs);
  if (t.notInjected > 0) {
    std::printf("campaign: %d drawn 'shared memory too small' faults were not injected (mounting a tmpfs needs root) "
                "and ran clean\n", t.notInjected);
  }
  if (!o.results.empty()) writeResults(o, t, secs);
  // Every failure counts, also one found before a job ran (a fault that could not be injected).
  return t.failures.empty() && t.passed == t.runs ? 0 : 1;
}

}  // namespace
}  // namespace cfxcampaign

int main(int argc, char** argv) { return cfxcampaign::runCampaign(argc, argv); }
