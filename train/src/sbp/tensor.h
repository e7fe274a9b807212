// Row-major tensor arithmetic for boxing: shapes under layouts, and copies of a run of rows
// along one dimension between tensors that agree on every other dimension.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conflux/train/sbp.h"

namespace conflux::train::sbp {

int64_t elements(const Shape& s);
// `shape` with dimension `dim` cut to part `index` of `parts`.
Shape splitShape(const Shape& shape, int dim, int parts, int index);
// The shape after applying `l` at part `index` of `parts` (Split cuts; Broadcast and Partial keep).
Shape applyLayout(const Shape& shape, const Layout& l, int parts, int index);

// Copies rows [srcRow, srcRow + rows) of dimension `dim` of `src` (shape `srcShape`) to rows
// [dstRow, ...) of `dst` (shape `dstShape`); the shapes agree on every other dimension.
void copyRows(const void* src, const Shape& srcShape, void* dst, const Shape& dstShape, int dim, int64_t srcRow,
              int64_t dstRow, int64_t rows, size_t elemBytes);

// Fills `count` elements with the identity of a partial layout's op: zero for PartialSum, the
// type's lowest value for PartialMax (-inf where the type has it; -448 for float8 e4m3, which has
// no infinity), its highest for PartialMin.
void fillIdentity(void* dst, int64_t count, cfxDataType_t dtype, Layout::Kind kind);

}  // namespace conflux::train::sbp
