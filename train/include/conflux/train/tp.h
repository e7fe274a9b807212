// Tensor parallelism (Megatron-LM): the communication of a tensor-parallel group, as boxing.
//
// A layer pair splits a matrix multiply across the group: a column-parallel linear (weights split
// by output features) followed by a row-parallel one (split by input features). Between them each
// rank holds its own slice of the features, so nothing moves; at the edges of that region the
// activations change layout, and Megatron pairs each forward conversion with its transpose in
// backward:
//   entering the region (before the column-parallel layer)
//       forward  B -> B (identity)                 backward  P -> B (AllReduce)
//   leaving it (after the row-parallel layer)
//       forward  P -> B (AllReduce)                backward  B -> B (identity)
// With sequence parallelism the activations outside the region are split by rows (tokens) across
// the group, so layer norm and dropout work on 1/n of them:
//   entering   forward  S(0) -> B (AllGather)      backward  P -> S(0) (ReduceScatter)
//   leaving    forward  P -> S(0) (ReduceScatter)  backward  S(0) -> B (AllGather)
// Each is one sbp::boxing on the group's 1-D placement (sbp.h). Activations are fp32 row-major
// [rows, cols]; `rows` is always the region's full row count (uneven row splits follow sbp's rule:
// the first rows % n ranks hold one row more).
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <memory>

#include "conflux/train/error.h"
#include "conflux/train/sbp.h"

namespace conflux::train::tp {

class CFX_TRAIN_API Group {
 public:
  // The ranks of `comm` form the group (comm is not owned; a placement is built over it).
  Group(cfxComm_t comm, bool sequenceParallel);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  int size() const;
  int rank() const;
  bool sequenceParallel() const;
  cfxComm_t comm() const;
  // The rows of a region of `rows` this rank holds outside it: [rowBegin, rowBegin + localRows)
  // with sequence parallelism, all of them otherwise.
  int localRows(int rows) const;
  int rowBegin(int rows) const;

  // x: localRows(rows) x cols -> full: rows x cols.
  void enterForward(const float* x, float* full, int rows, int cols) const;
  // dfull: this rank's partial gradient, rows x cols -> dx: localRows(rows) x cols.
  void enterBackward(const float* dfull, float* dx, int rows, int cols) const;
  // partial: rows x cols -> y: localRows(rows) x cols.
  void exitForward(const float* partial, float* y, int rows, int cols) const;
  // dy: localRows(rows) x cols -> dfull: rows x cols.
  void exitBackward(const float* dy, float* dfull, int rows, int cols) const;
  // Adds to `g` the gradient `increment` of a parameter every rank holds whole: with sequence
  // parallelism each rank computed it from its own rows, so the increments are summed over the
  // group first (P -> B); otherwise every rank's increment is already the whole.
  void addReplicatedGrad(float* g, const float* increment, size_t n) const;

  // Seconds spent in this group's communication so far (for step-time breakdowns).
  double commSeconds() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::train::tp
