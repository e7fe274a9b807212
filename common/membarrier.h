// An asymmetric fence (Linux membarrier(2), MEMBARRIER_CMD_PRIVATE_EXPEDITED): for a Dekker
// handshake whose one side runs at every call and whose other side is rare. The rare side calls
// processBarrier(), which runs a full memory barrier on every thread of this process that is on a
// CPU at that moment (a thread that is not was fenced by its context switch); the frequent side
// then needs only a compiler barrier between its store and its load, where it paid a locked
// instruction (liburcu's and folly's asymmetric fences work the same way).
#pragma once

namespace conflux::membarrier {

// Registers this process for processBarrier() (once is enough; again is harmless). False where the
// kernel lacks the command or a sandbox refuses it: the caller keeps its symmetric fences.
bool registerProcess();
// After a successful registerProcess(). False if the kernel refused it (the caller must then not
// rely on it).
bool processBarrier();

}  // namespace conflux::membarrier
