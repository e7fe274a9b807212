// The staged data path of one communicator (hfreduce's GPU path): a call's chunks flow device ->
// staging slot -> host collective -> staging slot -> device, with the three stages overlapped:
// chunk k+1 is copied in while chunk k is reduced on the host and chunk k-1 is copied out.
//
// submit() cuts the call into chunks (plan.h), queues every copy on the engine at once and hands
// the host part to the progress thread, so the caller never waits. The progress thread runs the
// host parts in submission order; for each chunk it waits for the input, runs the Conflux
// collective on the slot (blocking, with the chunk's columns as the count) and releases the chunk.
// After a failure the thread releases every remaining chunk without running it or waiting for its
// input, so no stream waits forever, and every later submit fails at once with the first error
// (NCCL's asynchronous error, read with asyncError()). The wait for a chunk's input is bounded by the
// communicator's timeout (cfxCommGetTimeout): a user stream that never reaches the call, or a copy
// that never completes, becomes that error instead of a hang.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "conflux/conflux.h"
#include "copy_engine.h"
#include "plan.h"

namespace conflux::staged {

struct Call {
  Coll coll;
  const void* send;
  void* recv;
  size_t count;  // NCCL's count argument
  cfxDataType_t type;
  cfxRedOp_t op;
  int root;  // the root, or the peer of a Send/Recv
};

class Pipeline {
 public:
  // `comm` stays owned by the caller and must outlive the pipeline.
  Pipeline(cfxComm_t comm, std::unique_ptr<CopyEngine> engine);
  ~Pipeline();  // runs what was submitted, then joins the progress thread
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Queues `call` after the work on `stream`; work queued on `stream` afterwards sees its result.
  // Throws Error for bad arguments or after an earlier failure (nothing is queued then), or when the
  // engine fails part way (the failure is then also the pipeline's error, and the chunks already
  // queued are released).
  void submit(const Call& call, void* stream);
  // Blocks until every submitted host part has run (the copies may still be in flight).
  void drain();
  // The first failure of a host part: cfxSuccess, or its result and message.
  cfxResult_t asyncError(std::string* message = nullptr) const;

  CopyEngine& engine() { return *engine_; }

 private:
  struct HostPart {
    Call call;
    Shape shape;
    std::vector<Chunk> chunks;
    uint64_t firstSeq;
  };
  void enqueue(HostPart part);
  void recordError(cfxResult_t r, const std::string& message);
  void run();
  void runHost(const HostPart& part);
  cfxResult_t runChunk(const HostPart& part, const Chunk& chunk, uint64_t seq);

  cfxComm_t comm_;
  int rank_ = 0;
  int nranks_ = 1;
  std::chrono::milliseconds timeout_{0};
  std::unique_ptr<CopyEngine> engine_;
  uint64_t nextSeq_ = 0;  // the submitting thread's

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<HostPart> queue_;
  bool busy_ = false;
  bool stop_ = false;
  cfxResult_t error_ = cfxSuccess;
  std::string errorMessage_;
  std::thread thread_;
};

}  // namespace conflux::staged
