// Collectives on registered buffers, with no staging copy (issue #31, section 3).
//
// When every buffer a collective touches in another process was registered (cfxMemAlloc), each
// rank works straight on its peers' buffers, mapped through the registry (registry.h):
//   AllReduce, Reduce: rank r reduces its slice of the message from every rank's input, in rank
//                      order, block by block into one output (or a cache-sized scratch block),
//                      and copies the block into every other output (the root's only, for Reduce);
//                      or, with streaming stores, tile by tile streamed into every output. Spans
//                      of a slice are claimed one by one (RegisteredBuffers::spansClaimed), and a rank done
//                      with its own slice takes the unclaimed spans of its peers';
//   ReduceScatter:     rank r reduces its own block from every rank's input into its output
//                      (streamed, when the stores chooser picks streaming stores); when every
//                      output is registered too, it then takes the unclaimed spans of its peers'
//                      blocks, as above;
//   AllGather:         rank r copies every rank's input into its output;
//   Broadcast:         every rank copies the root's input into its output.
// Reductions run the same kernel over the same inputs in the same rank order as the staged path,
// so the bits are identical to it (tests/registered_test.cc asserts it). Each input element is read
// once and each output element written once: the minimum of docs/bytes-moved.md.
//
// The path is chosen after the collective's first barrier, from what every rank published before
// it, so every rank takes the same one (ops/collective.h); a barrier after the work keeps every rank
// in the call until no peer reads or writes its buffers any more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "context.h"
#include "ops/op.h"

namespace conflux {

// Whether collective `c` has a zero-copy path.
bool hasZeroCopy(Coll c);
// The bytes of this rank's send and receive buffers for `a` on `nranks` ranks (0: not used).
void bufferBytes(const CollArgs& a, int rank, int nranks, size_t& send, size_t& recv);
// After every rank published its buffers for operation `seq` (RegisteredBuffers::publish): whether
// every buffer the zero-copy path touches in another process is registered. The same answer on
// every rank.
bool zeroCopyReady(const Context& ctx, const CollArgs& a, uint64_t seq);
// This rank's part of the collective. `block` is scratch the size of kZeroCopyBlockBytes.
void runZeroCopy(Context& ctx, const CollArgs& a, uint64_t seq, std::byte* block);

// Elements are reduced in blocks this large, which stay in cache while they are written out.
inline constexpr size_t kZeroCopyBlockBytes = 64 << 10;
// With ordinary stores AllReduce and Reduce use blocks this small, which stay in L1 between the
// reduction that writes one output and the copies into the others (zero_copy.cc).
inline constexpr size_t kZeroCopyDirectBlockBytes = 4 << 10;

}  // namespace conflux
