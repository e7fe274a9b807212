// Drives a batch of operations to completion on the calling thread. Collectives run one after
// another in issue order; point-to-point operations all progress together, one at a time per
// (peer, direction), which is what lets grouped sends and receives complete without deadlock.
//
// Waiting: poll CFX_SPIN times, then yield the core a few times, then sleep on this rank's futex
// doorbell until a peer rings it. Sleeping waiters wake periodically to check for abort, a
// poisoned communicator, dead peers and the timeout.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "context.h"
#include "ops/op.h"

namespace conflux {

// Throws Error on failure (after poisoning the communicator where peers would otherwise hang).
void executeBatch(Context& ctx, std::span<const std::unique_ptr<Op>> ops);

}  // namespace conflux
