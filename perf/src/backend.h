// What a perf binary needs from a communication library. One measurement loop (runner.cc) and one
// output format serve every backend: Conflux, MPI, Gloo and NCCL.
// Datatypes and ops use Conflux's enums (NCCL's values) as the common vocabulary.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "conflux/conflux.h"
#include "device_memory.h"

namespace cfxperf {

enum class Coll { kAllReduce, kAllGather, kReduceScatter, kAlltoAll, kBroadcast, kReduce, kSendRecv, kAlltoAllv };

struct OpArgs {
  Coll coll;
  const void* send;
  void* recv;
  size_t count;  // NCCL's per-call count (per rank for AllGather/ReduceScatter/AlltoAll)
  cfxDataType_t type;
  cfxRedOp_t op;
  int root;
  bool inPlace;
  // AlltoAllv: elements to and from each rank and their displacements (cfxtest::alltoallvBlock).
  const size_t* sendCounts = nullptr;
  const size_t* sendDispls = nullptr;
  const size_t* recvCounts = nullptr;
  const size_t* recvDispls = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;     // "conflux", "mpi", "gloo"
  virtual std::string device() const = 0;   // shown in the preamble, e.g. "shm"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual bool supports(Coll c, cfxDataType_t t, cfxRedOp_t op) const = 0;
  // Whether the backend has an in-place form of `c` (else the in-place columns read N/A).
  virtual bool supportsInPlace(Coll c) const { return true; }
  // Whether run() can take CUDA device buffers; useDevice() says they will come, on `device`.
  virtual bool acceptsDevice() const { return false; }
  virtual void useDevice(int /*device*/) {}
  // -R 1: host memory registered with the communicator (null: the backend has none).
  virtual std::unique_ptr<DeviceMemory> registeredMemory() { return nullptr; }
  // Issues one operation; may return before it completes when `blocking` is false.
  virtual void run(const OpArgs& a, bool blocking) = 0;
  // Waits for everything issued.
  virtual void sync() = 0;
  // Gathers `bytes` from every rank into out[rank * bytes] (used for timings and the preamble).
  virtual void allGatherBytes(const void* in, void* out, size_t bytes) = 0;
};

// Defined once per backend library; reads its rank and size from the launcher's environment.
std::unique_ptr<Backend> makeBackend(int& argc, char**& argv, int timeoutSeconds);

}  // namespace cfxperf
