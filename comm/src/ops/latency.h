// The latency path for collectives whose per-rank input fits a mailbox (ops/latency.cc).
#pragma once

#include <memory>

#include "ops/op.h"
#include "shm_layout.h"

namespace conflux {

inline constexpr int kMaxDirectRanks = 64;

// Whether a call can take the mailbox path.
bool fitsMailbox(const CollArgs& a, int nranks);
std::unique_ptr<Op> makeMailboxOp(const CollArgs& a, int nranks);

}  // namespace conflux
