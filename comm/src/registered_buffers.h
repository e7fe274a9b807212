// The registered buffers of one communicator's context, as its collectives see them (issue #31,
// section 3): this rank registers shareable memory (the API's cfxMemAlloc and cfxCommRegister,
// kept in a BufferRegistry); a collective publishes where its buffers lie, in this rank's
// RankControl, before its first barrier, and after it reads every rank's buffers in place
// (ops/zero_copy.h). A part of Context, which holds one and hands it out (Context::registered).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "registry.h"
#include "shm_layout.h"

namespace conflux {

class RegisteredBuffers {
 public:
  // `controls`: every local rank's control block (shared memory); `pids`: their processes. Both
  // outlive this object (the context holds all three).
  RegisteredBuffers(RankControl* controls, int rank, const std::vector<pid_t>& pids)
      : controls_(controls), rank_(rank), pids_(pids) {}

  // Registers the shareable allocation holding [p, p + bytes) (BufferRegistry::add).
  uint64_t add(const void* p, size_t bytes) { return registry_.add(p, bytes); }
  // Drops one reference to registration `id`, posting it to the peers at the last.
  bool remove(uint64_t id) { return registry_.remove(id, controls_[rank_].freed); }
  // The registration holding `p` (0: none).
  uint64_t find(const void* p) const { return registry_.find(p, 0).id; }

  // Where this rank's buffers of operation `seq` lie (nullptr: none); also resets the spans of
  // this rank's slice claimed in it (spansClaimed). Published by the barrier that follows.
  void publish(uint64_t seq, const void* send, size_t sendBytes, const void* recv, size_t recvBytes);
  // Whether local rank r's send (`recv` false) or receive buffer of operation `seq` is registered.
  bool isRegistered(int r, uint64_t seq, bool recv) const { return controls_[r].buffers[seq & 1][recv ? 1 : 0].id != 0; }
  // That buffer of another local rank, mapped here; nullptr when it is not registered.
  std::byte* peerBuffer(int r, uint64_t seq, bool recv);
  // The spans of local rank r's slice claimed so far in zero-copy operation `seq` (reset to 0 by
  // publish): each fetch_add claims the next one.
  std::atomic<uint64_t>& spansClaimed(int r, uint64_t seq) const { return controls_[r].spansClaimed[seq & 1]; }

 private:
  RankControl* controls_;
  int rank_;
  const std::vector<pid_t>& pids_;
  BufferRegistry registry_;
};

}  // namespace conflux
