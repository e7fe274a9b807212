// A reduction written into several outputs at once with streaming (non-temporal) stores: for each
// tile of a few cache lines, the kernel reduces the sources into a stack tile (in L1), then every
// output in turn gets the tile's lines with streaming stores (reduce/stream_lines.h). The
// inputs are read and the outputs written as one interleaved stream, and no output line is read
// for ownership. It runs the same kernel (reduce(), kernels.h) over the same sources in the same
// order, so the bits are those of reduce() into one output and copies of it.
//
// Registered AllReduce on the AMD EPYC VM (perf/probes/zero_copy_patterns.cc, 2 pinned threads,
// 128 MiB fp32, median of 6 runs): a sum streamed into both outputs as it is computed took 12.6 ms;
// reduced into 64 KiB of scratch and then streamed into each output in turn 17.5-18 ms, and
// reduced straight into one output then copied into the other with ordinary stores 19.6 ms
// (perf/RESULTS.md, 2026-11-28 (fourth)).
#pragma once

#include <cstddef>

#include "conflux/conflux.h"

namespace conflux::reduce {

// Bytes reduced per tile: a few lines, so that the inputs' reads and the outputs' streaming stores
// interleave finely, and enough that the kernel call is a small part of a tile's time. 256, 512,
// 1024 and 4096 read 8.0-8.2, 7.7-9.8, 7.6-8.0 and 7.0 GB/s busbw for 2-rank registered AllReduce
// of 128 MiB on the AMD EPYC VM (medians of 5-7 runs each, two series).
inline constexpr size_t kStreamTileBytes = 512;
// At most this many sources (more: reduceStreamed returns false).
inline constexpr int kMaxStreamSources = 64;

// dsts[0..ndst) = reduce(srcs[0..nsrc)), as reduce() computes it, with streaming stores for every
// whole, aligned line. Needs every output at the same offset within a cache line, and that offset
// a multiple of the element size; returns false, writing nothing, when they are not (the caller
// then reduces and copies). Ends with a store fence, so a flag stored after it publishes the data.
bool reduceStreamed(void* const* dsts, int ndst, const void* const* srcs, int nsrc, size_t count,
                    cfxDataType_t type, cfxRedOp_t op, int divisor);

}  // namespace conflux::reduce
