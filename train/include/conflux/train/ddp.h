// Distributed data parallelism over Conflux, on buffers the caller owns.
//
//   conflux::train::DistributedDataParallel ddp(comm);
//   for (auto& p : params) ddp.addParameter(p.name, p.data, p.grad, p.count, cfxFloat32);
//   ddp.finalize();                  // checks every rank registered the same; broadcasts rank 0's
//   ...backward, as each gradient is complete: ddp.markReady(index);
//   ddp.finishBackward();            // waits; gradients now hold the average over ranks
//
// Gradients are grouped into buckets of at most `bucketCapBytes`, in reverse registration order
// (the order backward produces them). When the last gradient of a bucket is marked ready, its
// AllReduce (Avg) is issued on a Conflux stream and overlaps the rest of backward. Buckets are
// issued in bucket order on every rank, whatever order their gradients became ready in, so ranks
// never issue collectives in different orders. Inside a noSync() scope nothing is communicated
// and gradients accumulate in place; the first step outside it averages the sum.
//
// A failure here is a conflux::train::Error. finishBackward() with gradients not marked ready is
// an error on that rank that also aborts the communicator, so the other ranks (already waiting in
// the bucket AllReduces) fail at once with a remote error instead of waiting for the timeout.
#pragma once

#include <conflux/conflux.h>

#include <cstddef>
#include <memory>
#include <string>

#include "conflux/train/error.h"

namespace conflux::train {

enum class WireType {
  kNative,  // the gradients' own datatype
  kBf16,    // fp32 gradients are sent as bf16 (Conflux reduces bf16 with fp32 accumulation)
};

struct DdpOptions {
  size_t bucketCapBytes = 25u << 20;
  bool broadcastParameters = true;  // finalize() copies rank 0's parameters to every rank
  WireType wire = WireType::kNative;
};

// Per-step timings, seconds, of the last step that communicated.
struct DdpStats {
  double copySeconds = 0;      // packing and unpacking bucket buffers (on the caller's thread)
  double exposedSeconds = 0;   // waiting in finishBackward for communication still running
  int buckets = 0;             // buckets issued
  size_t wireBytes = 0;        // bytes reduced per rank
};

class CFX_TRAIN_API DistributedDataParallel {
 public:
  // `comm` stays the caller's; it must outlive this object.
  explicit DistributedDataParallel(cfxComm_t comm, DdpOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // Registers one parameter (forward order); returns its index for markReady.
  int addParameter(std::string name, void* param, void* grad, size_t count, cfxDataType_t dtype);
  // Collective: compares every rank's registration (a checksum of counts and datatypes), builds the
  // buckets, and broadcasts parameters from rank 0 if asked.
  void finalize();

  // The gradient of parameter `index` is complete for this step.
  void markReady(int index);
  // Waits for every bucket and leaves averaged gradients in place (or, under noSync, only checks
  // that every gradient was marked and resets for the next micro-step).
  void finishBackward();

  // While a NoSync object is alive, steps do not communicate (gradient accumulation).
  class CFX_TRAIN_API NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
  };
  NoSync noSync() { return NoSync(*this); }

  int bucketCount() const;
  int bucketOf(int index) const;
  size_t bucketBufferBytes() const;  // the staging buffers' size
  const DdpStats& lastStats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace conflux::train
