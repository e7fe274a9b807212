// Whole cache lines copied with streaming (non-temporal) stores, the one place Conflux writes
// them (ops/copy.h's copyOut, reduce/stream_out.h's tiles). Where the CPU has AVX-512 each line
// goes out as one 64-byte store, which fills its write-combining buffer at once; elsewhere as
// four 16-byte stores. On the Intel Xeon VM (AVX-512), 2-rank plain AllReduce of 64-256 MiB with
// streaming stores ran 6-11% faster with the 64-byte stores, registered AllReduce 4-11%
// (perf/RESULTS.md, 2026-11-29 (eighth)). The bytes written are the same either way.
#pragma once

#include <cstddef>

namespace conflux::reduce {

// dst[0, bytes) = src[0, bytes) with streaming stores. `bytes` is a multiple of 64 and `dst` is
// 64-byte aligned; `src` may lie anywhere. No fence: the caller stores one (_mm_sfence) before
// anything that publishes the data.
void streamLines(void* dst, const void* src, size_t bytes);

// The two ways streamLines goes, for the tests (the wide one needs AVX-512F: streamLinesWideOk).
void streamLinesNarrow(void* dst, const void* src, size_t bytes);
void streamLinesWide(void* dst, const void* src, size_t bytes);
bool streamLinesWideOk();

}  // namespace conflux::reduce
