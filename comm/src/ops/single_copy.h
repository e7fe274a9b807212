// Single-copy data movement over cross-memory attach (ops/single_copy.cc).
#pragma once

#include <memory>

#include "ops/op.h"
#include "ops/tuning.h"

namespace conflux {

// Whether a call takes the single-copy path (large AllGather, AlltoAll or Broadcast, CMA allowed).
bool useSingleCopy(const CollArgs& a, const Tuning& tuning, int nranks);
std::unique_ptr<Op> makeSingleCopy(const CollArgs& a);

}  // namespace conflux
