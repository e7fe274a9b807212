// Sequence parallelism: attention over a sequence sharded across the ranks of a communicator.
//
// Tensors are [tokens, heads, headDim] fp32, row-major: Q, K and V of one sequence (per rank: the
// tokens of its shard, in the order shardPositions() lists). Scores are scaled by 1/sqrt(headDim);
// causal attention lets a token see itself and earlier positions.
//
// RingAttention (Liu et al.): K/V blocks travel around the ring with send/recv while each rank
// attends to the block in hand; partial outputs merge exactly through the log-sum-exp. With
// zigzag sharding (rank r holds chunks r and 2N-1-r of 2N), causal attention gives every rank the
// same work. Backward sends the K/V blocks round again with their gradients travelling alongside,
// so each block's dK/dV arrive home complete.
//
// Ulysses (DeepSpeed): an AlltoAll turns sequence shards into head shards, each rank runs full
// attention on heads/N heads, and a second AlltoAll turns the output back. heads must divide by N.
//
// Sequences that do not divide evenly: RingAttention takes unequal shards (block lengths differ
// by at most one token per chunk; no padding, nothing rejected). Ulysses pads every shard to
// ceil(seqLen / N) tokens, masks the padded keys out and ignores the padded rows.
#pragma once

#include <conflux/conflux.h>

#include <memory>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train::seqpar {

struct AttentionShape {
  int seqLen = 0;   // the whole sequence
  int heads = 1;
  int headDim = 1;
  bool causal = false;
};

enum class Sharding { kContiguous, kZigzag };

// Global positions of the tokens `rank` of `ranks` holds, in order.
CFX_TRAIN_API std::vector<int> shardPositions(int seqLen, int ranks, int rank, Sharding sharding);

// One-process attention over the whole sequence: the reference the sharded versions must match.
// lse (seqLen x heads) is the log-sum-exp of each row's scaled scores.
CFX_TRAIN_API void attentionForward(const AttentionShape& shape, const float* q, const float* k, const float* v,
                                    float* out, float* lse);
CFX_TRAIN_API void attentionBackward(const AttentionShape& shape, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                     float* dv);

struct SeqParStats {
  double seconds = 0;          // the last forward or backward call
  double computeSeconds = 0;   // attention arithmetic in it
  double exposedCommSeconds = 0;  // waiting for transfers that compute did not hide
};

struct RingOptions {
  Sharding sharding = Sharding::kZigzag;
  bool overlap = true;  // false: each transfer completes before the attention that follows (to measure)
};

class CFX_TRAIN_API RingAttention {
 public:
  RingAttention(cfxComm_t comm, AttentionShape shape, RingOptions options = {});
  ~RingAttention();
  RingAttention(const RingAttention&) = delete;
  RingAttention& operator=(const RingAttention&) = delete;

  const std::vector<int>& positions() const;  // this rank's tokens
  int localTokens() const;
  // q, k, v, out: localTokens() x heads x headDim. Keeps the row log-sum-exps for backward.
  void forward(const float* q, const float* k, const float* v, float* out);
  // The gradients of this rank's q, k and v (written, not accumulated), given the forward's
  // inputs and output again and the output's gradient.
  void backward(const float* q, const float* k, const float* v, const float* out, const float* dout, float* dq,
                float* dk, float* dv);
  const SeqParStats& lastStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class CFX_TRAIN_API Ulysses {
 public:
  // Throws Error(cfxInvalidArgument) unless heads divides by the communicator's size.
  Ulysses(cfxComm_t comm, AttentionShape shape);
  ~Ulysses();
  Ulysses(const Ulysses&) = delete;
  Ulysses& operator=(const Ulysses&) = delete;

  const std::vector<int>& positions() const;  // contiguous shard: [r * L, min((r + 1) * L, seqLen))
  int localTokens() const;
  void forward(const float* q, const float* k, const float* v, float* out);
  void backward(const float* q, const float* k, const float* v, const float* out, const float* dout, float* dq,
                float* dk, float* dv);
  const SeqParStats& lastStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::train::seqpar
