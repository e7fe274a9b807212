// The collectives staged through the shared-memory slots, one phased operation each
// (ops/collective.h). ops/select.h chooses among them and the other paths.
#pragma once

#include <memory>

#include "ops/op.h"

namespace conflux {

// ops/data_movement.cc
std::unique_ptr<Op> makeStagedBroadcast(const CollArgs& a);
std::unique_ptr<Op> makeStagedAllGather(const CollArgs& a);
std::unique_ptr<Op> makeStagedAlltoAll(const CollArgs& a);
// ops/reductions.cc
std::unique_ptr<Op> makeStagedReduceScatter(const CollArgs& a);
std::unique_ptr<Op> makeDirectAllReduce(const CollArgs& a);  // AllReduce and Reduce
std::unique_ptr<Op> makeRsagAllReduce(const CollArgs& a);    // AllReduce and Reduce
// ops/two_level.cc
std::unique_ptr<Op> makeTwoLevelAllReduce(const CollArgs& a);

}  // namespace conflux
