// Whether a process on this host is still running. A zombie (exited, not yet reaped) counts as
// dead: its sockets are closed and it will never make progress.
#pragma once

#include <sys/types.h>

namespace conflux::shm {

bool processAlive(pid_t pid);

}  // namespace conflux::shm
