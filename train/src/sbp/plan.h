// The path a boxing takes: pure arithmetic on signatures, shapes and the mesh (no communicator),
// the same on every rank, so the ranks issue the same collectives in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conflux/train/sbp.h"

namespace conflux::train::sbp {

enum class StepKind {
  kCopy,           // same layout (only on a 1-rank axis path)
  kSlice,          // B -> S: a local slice
  kToPartial,      // B -> P, S -> P: local
  kAllReduce,      // P -> B, and P -> P' of another kind (then local)
  kReduceScatter,  // P -> S
  kAllGather,      // S -> B
  kAlltoAll,       // S(d) -> S(e)
};
const char* stepName(StepKind k);
StepKind stepKind(const Layout& from, const Layout& to);

struct Step {
  int axis = 0;
  Layout from, to;
  StepKind kind = StepKind::kCopy;
  Signature before;    // every axis' layout before the step
  uint64_t bytes = 0;  // sent by one rank (the largest share)
};

struct Plan {
  std::vector<Step> steps;
  uint64_t bytes = 0;
  std::string describe() const;  // "axis 1: S(0) -> B (AllGather, 96 bytes); ..." or "no communication"
};

// Throws Error(cfxInvalidArgument) unless `sig` has one layout per mesh axis and splits only
// dimensions of `shape`; and unless `shape` and `mesh` are sane.
void validate(const Signature& sig, const Shape& shape, const std::vector<int>& mesh, const char* which);

// Whether axis `axis` may change from cur[axis] to `next` in one step while the other axes keep
// `cur` (see sbp.h: no inner axis split along a dimension the step splits or gathers, and no
// inner axis partial of another kind than the step's).
bool canChangeDirectly(const Signature& cur, int axis, const Layout& next);

// The tensor axis `axis` sees: `shape` with every other axis' layout applied, in axis order, at
// the given coordinates.
Shape axisView(const Shape& shape, const Signature& cur, int axis, const std::vector<int>& mesh,
               const std::vector<int>& coords);

// Bytes one rank sends for a step on a view `view` (the largest share).
uint64_t stepBytes(StepKind kind, const Layout& from, const Layout& to, const Shape& view, int parts, size_t elemBytes);

// The cheapest valid path from `from` to `to`; ties go to fewer steps, then to the first found
// (inner axes first).
Plan planBoxing(const Signature& from, const Signature& to, const Shape& shape, size_t elemBytes,
                const std::vector<int>& mesh);

}  // namespace conflux::train::sbp
