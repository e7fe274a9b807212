// cfxrun: start N local ranks of a program with the environment Conflux reads.
//
//   cfxrun -n N [-p|--prefix] [--grace SECONDS] [--] program [args...]
//
// Each rank gets CFX_UNIQUE_ID (the bootstrap root runs inside cfxrun), CFX_RANK, CFX_NRANKS,
// CFX_LOCAL_RANK and CFX_LOCAL_SIZE. Signals (INT, TERM, HUP, QUIT) are forwarded to every rank.
// SIGUSR1 is forwarded and stops nothing: every rank dumps its flight record (README, "When a job
// stalls"), so `kill -USR1 <cfxrun pid>` dumps the whole job.
// When a rank fails, the others get SIGTERM, then SIGKILL after the grace period, and cfxrun exits
// with the failing rank's status. Ranks die with cfxrun (PR_SET_PDEATHSIG), so none is orphaned.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/conflux.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int nranks = 0;
  bool prefix = false;
  double graceSeconds = 3.0;
  std::vector<char*> argv;  // program and arguments, NULL-terminated
};

[[noreturn]] void usage(const char* msg) {
  if (msg) std::fprintf(stderr, "cfxrun: %s\n", msg);
  std::fprintf(stderr,
               "usage: cfxrun -n N [-p|--prefix] [--grace SECONDS] [--] program [args...]\n"
               "  -n N         number of ranks to start on this host\n"
               "  -p, --prefix prefix every output line with the rank: [r] ...\n"
               "  --grace S    seconds between SIGTERM and SIGKILL for the other ranks when one fails (3)\n");
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-n" || a == "--np") {
      if (++i >= argc) usage("-n needs a value");
      o.nranks = std::atoi(argv[i]);
    } else if (a == "-p" || a == "--prefix") {
      o.prefix = true;
    } else if (a == "--grace") {
      if (++i >= argc) usage("--grace needs a value");
      o.graceSeconds = std::atof(argv[i]);
    } else if (a == "-h" || a == "--help") {
      usage(nullptr);
    } else if (!a.empty() && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else {
      break;
    }
  }
  if (o.nranks < 1) usage("-n must be at least 1");
  if (i >= argc) usage("no program given");
  for (; i < argc; ++i) o.argv.push_back(argv[i]);
  o.argv.push_back(nullptr);
  return o;
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

struct Rank {
  pid_t pid = -1;
  int out = -1, err = -1;          // pipe read ends when prefixing
  std::string outBuf, errBuf;      // partial lines
  bool exited = false;
  int status = 0;
};

// The environment of one rank: ours without stale CFX_* launch variables, plus the rank's own.
std::vector<std::string> rankEnvironment(const std::string& id, int rank, int nranks) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    bool ours = v.rfind("CFX_UNIQUE_ID=", 0) == 0 || v.rfind("CFX_RANK=", 0) == 0 || v.rfind("CFX_NRANKS=", 0) == 0 ||
                v.rfind("CFX_LOCAL_RANK=", 0) == 0 || v.rfind("CFX_LOCAL_SIZE=", 0) == 0;
    if (!ours) env.push_back(v);
  }
  env.push_back("CFX_UNIQUE_ID=" + id);
  env.push_back("CFX_RANK=" + std::to_string(rank));
  env.push_back("CFX_NRANKS=" + std::to_string(nranks));
  env.push_back("CFX_LOCAL_RANK=" + std::to_string(rank));
  env.push_back("CFX_LOCAL_SIZE=" + std::to_string(nranks));
  return env;
}

void flushLines(std::string& buf, int rank, FILE* to, bool all) {
  size_t start = 0;
  for (;;) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) break;
    std::fprintf(to, "[%d] %.*s\n", rank, static_cast<int>(nl - start), buf.c_str() + start);
    start = nl + 1;
  }
  buf.erase(0, start);
  if (all && !buf.empty()) {
    std::fprintf(to, "[%d] %s\n", rank, buf.c_str());
    buf.clear();
  }
  std::fflush(to);
}

bool drain(int& fd, std::string& buf, int rank, FILE* to) {
  char tmp[4096];
  ssize_t n = read(fd, tmp, sizeof(tmp));
  if (n > 0) {
    buf.append(tmp, static_cast<size_t>(n));
    flushLines(buf, rank, to, false);
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    flushLines(buf, rank, to, true);
    close(fd);
    fd = -1;
  }
  return false;
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);

  // Block the handled signals before any thread exists (the bootstrap root is a thread): a
  // thread that leaves them unblocked would take a SIGTERM with its default action.
  sigset_t handled, previous;
  sigemptyset(&handled);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1}) sigaddset(&handled, s);
  pthread_sigmask(SIG_BLOCK, &handled, &previous);

  cfxUniqueId id;
  if (cfxGetUniqueId(&id) != cfxSuccess) {
    std::fprintf(stderr, "cfxrun: cannot start the bootstrap root: %s\n", cfxGetLastError(nullptr));
    return 1;
  }
  std::string idHex = hexId(id);

  int sfd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    std::perror("cfxrun: signalfd");
    return 1;
  }

  const pid_t self = getpid();
  std::vector<Rank> ranks(opt.nranks);
  for (int r = 0; r < opt.nranks; ++r) {
    // Everything the child needs is prepared before fork: it only calls async-signal-safe code.
    std::vector<std::string> envStrings = rankEnvironment(idHex, r, opt.nranks);
    std::vector<char*> envp;
    for (auto& s : envStrings) envp.push_back(s.data());
    envp.push_back(nullptr);
    int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
    if (opt.prefix && (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0)) {
      std::perror("cfxrun: pipe");
      return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("cfxrun: fork");
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != self) _exit(127);  // cfxrun already died
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
      if (opt.prefix) {
        dup2(outPipe[1], STDOUT_FILENO);
        dup2(errPipe[1], STDERR_FILENO);
      }
      execvpe(opt.argv[0], opt.argv.data(), envp.data());
      const char msg[] = "cfxrun: cannot execute the program\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
      (void)ignored;
      _exit(127);
    }
    ranks[r].pid = pid;
    if (opt.prefix) {
      close(outPipe[1]);
      close(errPipe[1]);
      ranks[r].out = outPipe[0];
      ranks[r].err = errPipe[0];
      fcntl(ranks[r].out, F_SETFL, O_NONBLOCK);
      fcntl(ranks[r].err, F_SETFL, O_NONBLOCK);
    }
  }

  int exitCode = 0;
  int running = opt.nranks;
  bool stopping = false;
  Clock::time_point killAt{};
  auto signalAll = [&](int sig) {
    for (auto& rk : ranks) {
      if (!rk.exited) kill(rk.pid, sig);
    }
  };
  auto startStopping = [&](int code, const std::string& why) {
    if (stopping) return;
    stopping = true;
    exitCode = code;
    if (!why.empty()) std::fprintf(stderr, "cfxrun: %s; stopping the other ranks\n", why.c_str());
    signalAll(SIGTERM);
    killAt = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opt.graceSeconds * 1000));
  };

  bool pipesOpen = opt.prefix;
  while (running > 0 || pipesOpen) {
    std::vector<pollfd> fds{{sfd, POLLIN, 0}};
    for (auto& rk : ranks) {
      if (rk.out >= 0) fds.push_back({rk.out, POLLIN, 0});
      if (rk.err >= 0) fds.push_back({rk.err, POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 100);

    signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
      int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) continue;
      if (sig == SIGUSR1) {
        signalAll(SIGUSR1);
        continue;
      }
      if (stopping) {
        signalAll(SIGKILL);
      } else {
        stopping = true;
        exitCode = 128 + sig;
        signalAll(sig);
        killAt = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opt.graceSeconds * 1000));
      }
    }
    for (int r = 0; r < opt.nranks; ++r) {
      Rank& rk = ranks[r];
      if (rk.out >= 0) while (drain(rk.out, rk.outBuf, r, stdout)) {}
      if (rk.err >= 0) while (drain(rk.err, rk.errBuf, r, stderr)) {}
    }
    for (int r = 0; r < opt.nranks; ++r) {
      Rank& rk = ranks[r];
      if (rk.exited) continue;
      int status = 0;
      if (waitpid(rk.pid, &status, WNOHANG) == rk.pid) {
        rk.exited = true;
        rk.status = status;
        --running;
        int code = exitCodeOf(status);
        if (code != 0) {
          startStopping(code, "rank " + std::to_string(r) + " (pid " + std::to_string(rk.pid) + ") " +
                                  (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                                       : "exited with status " + std::to_string(code)));
        }
      }
    }
    if (stopping && running > 0 && Clock::now() > killAt) signalAll(SIGKILL);
    pipesOpen = false;
    for (auto& rk : ranks) pipesOpen |= rk.out >= 0 || rk.err >= 0;
  }
  return exitCode;
}
