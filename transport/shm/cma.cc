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

namespace {

// One direction of a copy between this process and `pid`, retried until every byte moved.
void cmaCopy(bool write, pid_t pid, int peerRank, void* local, void* remote, size_t bytes) {
  auto* mine = static_cast<char*>(local);
  auto* theirs = static_cast<char*>(remote);
  while (bytes > 0) {
    iovec l{mine, bytes};
    iovec r{theirs, bytes};
    ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n > 0) {
      mine += n;
      theirs += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    int e = n == 0 ? EFAULT : errno;
    if (e == EINTR) continue;
    if (e == ESRCH) throw Error(Status::kRemoteError, "rank " + std::to_string(peerRank) + " exited during a copy");
    throwSystemError(std::string(write ? "process_vm_writev to" : "process_vm_readv from") + " rank " +
                         std::to_string(peerRank) + " (pid " + std::to_string(pid) +
                         "); set CFX_CMA=0 to use the staged copy instead",
                     e);
  }
}

}  // namespace

void cmaRead(pid_t pid, int peerRank, void* local, const void* remote, size_t bytes) {
  cmaCopy(false, pid, peerRank, local, const_cast<void*>(remote), bytes);
}

void cmaWrite(pid_t pid, int peerRank, void* remote, const void* local, size_t bytes) {
  cmaCopy(true, pid, peerRank, const_cast<void*>(local), remote, bytes);
}

}  // namespace conflux::shm
