#include "plan.h"

#include <algorithm>
#include <string>

#include "common/error.h"

namespace conflux::staged {

Shape shapeOf(Coll c, size_t count, int nranks, int rank, int root) {
  switch (c) {
    case Coll::kAllReduce: return {count, 1, 1, true, true};
    case Coll::kReduce: return {count, 1, 1, true, rank == root};
    case Coll::kBroadcast: return {count, 1, 1, rank == root, true};
    case Coll::kAllGather: return {count, 1, nranks, true, true};
    case Coll::kReduceScatter: return {count, nranks, 1, true, true};
    case Coll::kAlltoAll: return {count, nranks, nranks, true, true};
    case Coll::kSend: return {count, 1, 1, true, false};
    case Coll::kRecv: return {count, 1, 1, false, true};
  }
  throw Error(Status::kInternalError, "unknown staged collective");
}

std::vector<Chunk> chunksOf(const Shape& s, size_t elemSize, size_t slotBytes) {
  std::vector<Chunk> chunks;
  if (s.rowElems == 0) return chunks;
  const size_t perColumn = static_cast<size_t>(s.inRows + s.outRows) * elemSize;
  const size_t width = slotBytes / perColumn;
  if (width == 0) {
    throw Error(Status::kInvalidArgument, "a staging slot of " + std::to_string(slotBytes) +
                                              " bytes cannot hold one column (" + std::to_string(perColumn) + " bytes)");
  }
  for (size_t col = 0; col < s.rowElems; col += width) chunks.push_back({col, std::min(width, s.rowElems - col)});
  return chunks;
}

SlotLayout slotLayout(const Shape& s, size_t cols, size_t elemSize) {
  const size_t rowBytes = cols * elemSize;
  return {0, static_cast<size_t>(s.inRows) * rowBytes, rowBytes};
}

}  // namespace conflux::staged
