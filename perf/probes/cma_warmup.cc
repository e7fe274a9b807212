// How the first single copies of a buffer compare with the later ones (issue #31, section 4; the
// warm calls of comm/src/ops/path_trial.h): a forked child holds a buffer of S MiB, written once;
// the parent, its own destination written once too, reads the child's buffer whole with
// process_vm_readv, call after call, and prints each call's time, then memcpy's over the same
// buffers. On the Intel Xeon VM (2026-12-02, 16 MiB): 5.17 4.47 2.88 2.28 then 2.0-2.2 ms, memcpy
// 1.52; the buffers madvised MADV_HUGEPAGE ("huge"): 2.94 2.56 1.57 then 1.20-1.41.
//
//   build/perf/cma_warmup [MiB=16] [calls=30] [huge]
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

double ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// `bytes` of memory aligned to 2 MiB, written once (advised to use huge pages if asked).
char* buffer(size_t bytes, bool huge, int fill) {
  void* p = nullptr;
  if (posix_memalign(&p, size_t{2} << 20, bytes) != 0) {
    std::perror("posix_memalign");
    std::exit(1);
  }
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, fill, bytes);
  return static_cast<char*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = static_cast<size_t>(argc > 1 ? std::atol(argv[1]) : 16) << 20;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 30;
  const bool huge = argc > 3 && std::string(argv[3]) == "huge";
  int pipeFd[2];
  if (pipe(pipeFd) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    char* src = buffer(bytes, huge, 2);
    if (write(pipeFd[1], &src, sizeof src) != sizeof src) _exit(1);
    pause();
    _exit(0);
  }
  char* remote = nullptr;
  if (read(pipeFd[0], &remote, sizeof remote) != sizeof remote) return 1;
  char* dst = buffer(bytes, huge, 0);
  std::printf("process_vm_readv of %zu MiB, ms per call:", bytes >> 20);
  for (int i = 0; i < calls; ++i) {
    iovec local{dst, bytes}, theirs{remote, bytes};
    const auto start = std::chrono::steady_clock::now();
    if (process_vm_readv(child, &local, 1, &theirs, 1, 0) != static_cast<ssize_t>(bytes)) std::perror("process_vm_readv");
    std::printf(" %.2f", ms(start));
  }
  char* src = buffer(bytes, huge, 3);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) std::memcpy(dst, src, bytes);
  std::printf("\nmemcpy over the same sizes: %.2f ms\n", ms(start) / 10);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return 0;
}
