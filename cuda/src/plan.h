// How a collective on device buffers is staged through host memory in chunks (hfreduce's data
// path): pure arithmetic, in the style of comm/src/patterns, unit-tested without a GPU.
//
// Every staged collective sees its device buffers as rows of `rowElems` elements: one row for a
// whole buffer, `nranks` rows for a buffer with one block per rank (AllGather's output,
// ReduceScatter's input, both of AlltoAll's). A chunk is a range of columns of every row: its input
// rows are copied to a staging slot, the host runs the same collective on the slot with `cols` as
// the count, and its output rows are copied back. Chunk sizes depend only on the collective and the
// slot size, never on the rank, so every rank cuts the same chunks and the per-chunk host
// collectives match.
#pragma once

#include <cstddef>
#include <vector>

#include "conflux/conflux.h"

namespace conflux::staged {

enum class Coll { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll, kSend, kRecv };

struct Shape {
  size_t rowElems;  // the dimension chunks cut
  int inRows;       // rows of one chunk's input in a slot (the same on every rank)
  int outRows;      // rows of one chunk's output in a slot
  bool copyIn;      // this rank's input is read (the root of a Broadcast, not a Recv)
  bool copyOut;     // this rank's output is written (the root of a Reduce, not a Send)
};
// On the device, rows are `rowElems` apart (NCCL's layouts: one block of `count` per rank).

// `count` is NCCL's count argument of the collective (Send/Recv: the message's count).
Shape shapeOf(Coll c, size_t count, int nranks, int rank, int root);

struct Chunk {
  size_t col;   // first column
  size_t cols;  // columns (the host collective's count)
};

// Chunks covering every column, each at most `slotBytes` of staging (input rows, then output
// rows); none for an empty collective. Throws Error(kInvalidArgument) when one column of the
// collective does not fit a slot.
std::vector<Chunk> chunksOf(const Shape& s, size_t elemSize, size_t slotBytes);

// Byte offsets inside a slot of a chunk of `cols` columns: input rows, then output rows, each row
// `cols` elements long and packed.
struct SlotLayout {
  size_t inOffset;
  size_t outOffset;
  size_t rowBytes;
};
SlotLayout slotLayout(const Shape& s, size_t cols, size_t elemSize);

}  // namespace conflux::staged
