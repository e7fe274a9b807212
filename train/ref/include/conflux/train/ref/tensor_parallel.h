// Tensor parallelism (Megatron-LM) on the reference model's buffers: the two split linear layers
// and a transformer block built from them, with optional sequence parallelism. The communication
// is conflux::train::tp::Group's (tp.h): each conversion one SBP boxing.
//
// Weights are stored [in, out] as in the one-process layers. A column-parallel layer holds the
// columns [r out/n, (r+1) out/n) of W and of its bias; a row-parallel layer the rows
// [r in/n, (r+1) in/n) of W and the whole bias (added once, after the reduction).
//
// The block (makeTensorParallelBlock) splits attention by heads (Q, K and V fused into one
// column-parallel layer, the output projection row-parallel) and the MLP by hidden features (fc1
// column-, fc2 row-parallel): per block, forward reduces twice and backward twice, as in
// Megatron. Layer norms, the output biases and the residual stream are replicated; with sequence
// parallelism they hold 1/n of the rows (tokens), the region's edges AllGather and ReduceScatter
// instead, and the replicated parameters' gradients are summed over the group.
#pragma once

#include <memory>
#include <string>

#include "conflux/train/ref/model.h"
#include "conflux/train/tp.h"

namespace conflux::train::ref {

class ColumnParallelLinear {
 public:
  // out must divide by the group's size.
  ColumnParallelLinear(const tp::Group& group, int in, int out);
  int localOut() const { return localOut_; }
  // y (rows x localOut) = enter(x) W + b; x holds group.localRows(rows) rows. b may be null.
  void forward(const Act& x, int rows, const float* W, const float* b, Act& y);
  // Accumulates dW and db (may be null) from the kept input; dx (localRows x in) =
  // enterBackward(dy W^T).
  void backward(const Act& dy, const float* W, float* dW, float* db, Act& dx);

 private:
  const tp::Group& group_;
  int in_, localOut_;
  Act x_;  // the entered input, rows x in
};

class RowParallelLinear {
 public:
  // in must divide by the group's size.
  RowParallelLinear(const tp::Group& group, int in, int out);
  int localIn() const { return localIn_; }
  // y (group.localRows(rows) x out) = exit(x W) + b; x: rows x localIn. b (whole) may be null.
  void forward(const Act& x, const float* W, const float* b, Act& y);
  // dx (rows x localIn) = exitBackward(dy) W^T; accumulates dW, and db as a replicated parameter.
  void backward(const Act& dy, const float* W, float* dW, float* db, Act& dx);

 private:
  const tp::Group& group_;
  int localIn_, out_;
  Act x_;  // the input, rows x localIn
};

// A transformer block (the one makeTransformer builds) split over `group`; heads and ffn must
// divide by its size. Its layer's input and output hold group.localRows(rows) rows of the
// residual stream. Initialised as the one-process block's slice (the same draws), so a model of
// these blocks starts where the one-process model does. The group must outlive the layer.
std::unique_ptr<Layer> makeTensorParallelBlock(std::string name, const TransformerConfig& c, const tp::Group& group);

// makeTransformer with every block tensor-parallel over `group` (embedding and head replicated in
// the group, whose ranks compute them alike): layer i matches makeTransformer's layer i, its
// initial values the slice of that layer's (Model::initLayer with the same seed). Without
// sequence parallelism (the embedding and the head hold whole rows); the group must outlive it.
Model makeTensorParallelTransformer(const TransformerConfig& c, const tp::Group& group);

// This rank's slice of a one-process block's parameter (or gradient) buffer, in the tensor-
// parallel block's layout: numParams of makeTensorParallelBlock(...) floats into `local`.
void shardTransformerBlock(const TransformerConfig& c, int groupSize, int groupRank, const float* full, float* local);

}  // namespace conflux::train::ref
