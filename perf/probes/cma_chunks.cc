// What cross-memory attach moves on this machine, by piece size (issue #31, section 3): a forked
// child holds a buffer of S MiB; the parent reads it with process_vm_readv in pieces of C KiB into
// one buffer of C KiB (which stays in cache, as the single-copy reduction's does), then writes
// that buffer back over the child's with process_vm_writev, and times memcpy over its own buffer
// of S MiB the same way. The first round faults the pages in; the rounds after it are the rates.
//
//   build/perf/cma_chunks [MiB=256] [KiB pieces=64,128,256,1024] [rounds=3]
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t total = static_cast<size_t>(argc > 1 ? std::atol(argv[1]) : 256) << 20;
  std::vector<size_t> pieces;
  std::stringstream list(argc > 2 ? argv[2] : "64,128,256,1024");
  for (std::string kib; std::getline(list, kib, ',');) pieces.push_back(static_cast<size_t>(std::atol(kib.c_str())) << 10);
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  std::vector<char> theirs(total, 1), mine(total, 2);
  int go[2];
  if (pipe(go) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {  // holds `theirs` (its own copy after the fork) until the parent is done
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  int rc = 0;
  for (size_t piece : pieces) {
    std::vector<char> buffer(piece, 3);
    for (int round = 0; round <= rounds && rc == 0; ++round) {
      auto t = std::chrono::steady_clock::now();
      for (size_t off = 0; off + piece <= total && rc == 0; off += piece) {
        iovec local{buffer.data(), piece}, remote{theirs.data() + off, piece};
        if (process_vm_readv(child, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(piece)) rc = 1;
      }
      const double read = seconds(t);
      t = std::chrono::steady_clock::now();
      for (size_t off = 0; off + piece <= total && rc == 0; off += piece) {
        iovec local{buffer.data(), piece}, remote{theirs.data() + off, piece};
        if (process_vm_writev(child, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(piece)) rc = 1;
      }
      const double write = seconds(t);
      t = std::chrono::steady_clock::now();
      for (size_t off = 0; off + piece <= total; off += piece) std::memcpy(buffer.data(), mine.data() + off, piece);
      const double copyIn = seconds(t);
      t = std::chrono::steady_clock::now();
      for (size_t off = 0; off + piece <= total; off += piece) std::memcpy(mine.data() + off, buffer.data(), piece);
      const double copyOut = seconds(t);
      if (round == 0 || rc != 0) continue;
      std::printf("%zu MiB in %zu KiB pieces: process_vm_readv %.2f GB/s, process_vm_writev %.2f, memcpy in %.2f, out %.2f\n",
                  total >> 20, piece >> 10, total / read / 1e9, total / write / 1e9, total / copyIn / 1e9,
                  total / copyOut / 1e9);
    }
  }
  if (rc != 0) std::perror("cross-memory attach (Yama's ptrace_scope must be 0)");
  (void)!write(go[1], "x", 1);
  waitpid(child, nullptr, 0);
  return rc;
}
