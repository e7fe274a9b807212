// Whether a process on this host is still running, and what it is doing. A zombie (exited, not
// yet reaped) counts as dead: its sockets are closed and it will never make progress.
#pragma once

#include <sys/types.h>

namespace conflux::shm {

bool processAlive(pid_t pid);
// Gone or going: exited, a zombie, or exiting (a SIGKILLed process closes its sockets while it
// exits, so its peers may hear of its death before it is a zombie).
bool processGone(pid_t pid);
// The state letter of /proc/<pid>/stat: 'R' running, 'S'/'D' sleeping, 'T' stopped (SIGSTOP),
// 't' stopped by a tracer, 'Z'/'X' exited; 0 when the process is gone.
char processState(pid_t pid);

}  // namespace conflux::shm
