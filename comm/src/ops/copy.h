// Copies into user buffers. Messages much larger than the caches are written with non-temporal
// (streaming) stores: the destination is not read for ownership first and does not evict the
// staging buffers, which saves a third of the memory traffic of the final copy.
#pragma once

#include <cstddef>

namespace conflux {

inline constexpr size_t kStreamingMinBytes = 8 << 20;

void copyOut(void* dst, const void* src, size_t bytes, bool streaming);

}  // namespace conflux
