#include "transport/shm/cma.h"

#include <sys/uio.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "common/error.h"

namespace conflux::shm {

bool cmaAvailable() {
  std::ifstream yama("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  if (yama >> scope) return scope == 0;
  return true;  // no Yama: same-user processes may read each other
}

void cmaRead(pid_t pid, int peerRank, void* local, const void* remote, size_t bytes) {
  auto* dst = static_cast<char*>(local);
  const auto* src = static_cast<const char*>(remote);
  while (bytes > 0) {
    iovec l{dst, bytes};
    iovec r{const_cast<char*>(src), bytes};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n > 0) {
      dst += n;
      src += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    int e = n == 0 ? EFAULT : errno;
    if (e == EINTR) continue;
    if (e == ESRCH) throw Error(Status::kRemoteError, "rank " + std::to_string(peerRank) + " exited during a copy");
    throwSystemError("process_vm_readv from rank " + std::to_string(peerRank) + " (pid " + std::to_string(pid) +
                         "); set CFX_CMA=0 to use the staged copy instead",
                     e);
  }
}

}  // namespace conflux::shm
