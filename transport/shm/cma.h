// Cross-memory attach: copying straight from or into another process's memory (process_vm_readv,
// process_vm_writev), the single-copy path for large messages between ranks of one host.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace conflux::shm {

// Whether this host lets a process read its same-user peers' memory (no Yama ptrace restriction).
// The answer is the same for every process of the host, so all ranks choose alike.
bool cmaAvailable();

// Copies `bytes` from `remote` in process `pid` to `local`. Throws Error(kSystemError) naming the
// peer and the fix (CFX_CMA=0) if the kernel refuses, Error(kRemoteError) if the peer is gone.
void cmaRead(pid_t pid, int peerRank, void* local, const void* remote, size_t bytes);
// Copies `bytes` from `local` to `remote` in process `pid`; the same errors.
void cmaWrite(pid_t pid, int peerRank, void* remote, const void* local, size_t bytes);

}  // namespace conflux::shm
