#include "reduce/stream_out.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "reduce/kernels.h"
#include "reduce/stream_lines.h"

namespace conflux::reduce {

namespace {

constexpr size_t kLine = 64;

size_t lineOffset(const void* p) { return reinterpret_cast<uintptr_t>(p) & (kLine - 1); }

// One tile: reduced into `tile`, then written into every output at element `at`.
void tileInto(void* const* dsts, int ndst, const void* const* srcs, int nsrc, size_t at, size_t count, size_t es,
              cfxDataType_t type, cfxRedOp_t op, int divisor, std::byte* tile, bool streaming) {
  if (count == 0) return;
  const void* from[kMaxStreamSources];
  for (int r = 0; r < nsrc; ++r) from[r] = static_cast<const std::byte*>(srcs[r]) + at * es;
  reduce(tile, from, nsrc, count, type, op, divisor);
  const size_t bytes = count * es;
  if (!streaming) {
    for (int d = 0; d < ndst; ++d) std::memcpy(static_cast<std::byte*>(dsts[d]) + at * es, tile, bytes);
    return;
  }
  for (int d = 0; d < ndst; ++d) streamLines(static_cast<std::byte*>(dsts[d]) + at * es, tile, bytes);
}

}  // namespace

bool reduceStreamed(void* const* dsts, int ndst, const void* const* srcs, int nsrc, size_t count,
                    cfxDataType_t type, cfxRedOp_t op, int divisor) {
  const size_t es = dataTypeSize(type);
  if (ndst < 1 || nsrc < 1 || nsrc > kMaxStreamSources || es == 0) return false;
  const size_t off = lineOffset(dsts[0]);
  for (int d = 1; d < ndst; ++d) {
    if (lineOffset(dsts[d]) != off) return false;
  }
  const size_t headBytes = (kLine - off) & (kLine - 1);
  if (headBytes % es != 0) return false;
  alignas(kLine) std::byte tile[kStreamTileBytes];
  // The head up to the first line boundary, whole tiles of whole lines, then the tail.
  const size_t head = std::min(count, headBytes / es);
  const size_t perTile = kStreamTileBytes / es, perLine = kLine / es;
  const size_t body = head + (count - head) / perLine * perLine;
  tileInto(dsts, ndst, srcs, nsrc, 0, head, es, type, op, divisor, tile, false);
  for (size_t at = head, n; at < body; at += n) {
    n = std::min(perTile, body - at);
    tileInto(dsts, ndst, srcs, nsrc, at, n, es, type, op, divisor, tile, true);
  }
  tileInto(dsts, ndst, srcs, nsrc, body, count - body, es, type, op, divisor, tile, false);
  _mm_sfence();
  return true;
}

}  // namespace conflux::reduce
