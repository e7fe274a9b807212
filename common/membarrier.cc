#include "common/membarrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace conflux::membarrier {

namespace {
long call(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }
}  // namespace

bool registerProcess() {
  const long supported = call(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

bool processBarrier() { return call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0; }

}  // namespace conflux::membarrier
