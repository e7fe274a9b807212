// The exact reductions (cfxSumExact, cfxAvgExact; reduce/exact_sum.h) on a communicator that spans
// hosts. The hierarchical path (hier/) reduces on each host and then between hosts, so what crosses
// the network is a rounded partial sum. Here nothing is reduced before it is exact: each rank
// receives the raw inputs of its slice from every rank (ReduceScatterv's rank-to-rank path, which
// never pads onto the hierarchical ReduceScatter for an exact op) and reduces all of them at once
// with the exact kernel; the rounded slices are then all-gathered.
//  - ReduceScatter: that ReduceScatterv with every count equal.
//  - AllReduce: the ReduceScatterv of 64-byte-aligned slices (ops/collective.h sliceOf) into the
//    output, then an AllGatherv of the slices in place (in place too: a rank's block p leaves
//    before rank p can have reduced it, so before its slice comes back).
//  - Reduce: the same with the non-roots' output in a temporary (an all-gather where a gather
//    would do: simpler, and what crosses the links is the same per host pair).
// The raw inputs are the exact partial state: for the rank counts per host here, L raw elements
// are smaller than any fixed-size exact accumulator of a float (a 277-bit fixed point is 36 bytes,
// nine floats), and nothing is rounded twice. Between hosts this moves (hosts - 1) / hosts of the
// message per rank, where the hierarchical path moves 1 / (ranks per host) of that.
#pragma once

#include <memory>
#include <vector>

#include "ops/op.h"

namespace conflux {

class Communicator;

// The batches for one exact AllReduce, Reduce or ReduceScatter across hosts (arguments checked),
// to run one after the other: the ReduceScatterv, then (AllReduce, Reduce) the AllGatherv. In one
// batch, two v-collectives' count checks (hierarchical AllGathers) met a message of the first
// check at a rank already in the second, on 2 hosts x 2 + 1 rank (5 runs in 12 of MultiHostExact,
// CFX_TEST_HOSTS="-:127.0.0.1:2 -:127.0.0.1:1"): two batches keep them apart outside a group.
std::vector<std::vector<std::unique_ptr<Op>>> makeExactAcrossHosts(const Communicator& comm, const CollArgs& a);

}  // namespace conflux
