// The bootstrap root: one detached thread (started by cfxGetUniqueId, or by rank 0 under launchers
// that give only an address) that
//   1. accepts connections and checks each rank's hello (magic, version, secret, bounded length,
//      rank in range, nranks agreed, no duplicate rank); a connection that fails a wire check is
//      dropped with a warning and the job still forms; a job-level error (duplicate rank, nranks
//      mismatch, rank out of range) is sent to every rank that connects;
//   2. once all ranks joined, sends each the table of all ranks (pid, host);
//   3. serves barriers carrying a status, releasing all ranks with the first failure, until every
//      rank has disconnected.
// It owns all of its state and exits on completion, on error, or after the bootstrap timeout.
#pragma once

#include <chrono>

#include "bootstrap/unique_id.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {

// Binds `bindAddr` (port 0: any free port), starts the root thread and returns the bound address.
net::SockAddr startRoot(const net::SockAddr& bindAddr, const Secret& secret, std::chrono::milliseconds timeout);

}  // namespace conflux::bootstrap
