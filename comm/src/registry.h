// Registered buffers (issue #31, section 3): the shareable allocations this rank registered with
// its communicator (cfxMemAlloc, cfxCommRegister), and this rank's mappings of its peers' ones.
//
// A collective whose buffers are registered on every rank runs with no staging copy
// (ops/zero_copy.h): each rank publishes where its buffers lie (PublishedBuffer, by registration
// id and offset), and the peers map them here on first use and keep the mapping. When a rank
// deregisters a buffer it posts the id in its RankControl (shm_layout.h); the peers drop their
// mapping the next time they look one of its buffers up, so a freed buffer's memory is returned.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "shm_layout.h"
#include "transport/shm/shareable.h"

namespace conflux {

class BufferRegistry {
 public:
  // Registers the shareable allocation holding [p, p + bytes); returns the registration's id
  // (never 0; the same id again, counted, for an allocation registered already). Throws
  // Error(kInvalidArgument) when the range is not shareable memory.
  uint64_t add(const void* p, size_t bytes);
  // Drops one reference to registration `id`; at the last, forgets it and posts the id on `board`
  // (this rank's notices to its peers). False when there is no such registration.
  bool remove(uint64_t id, FreedNotices& board);
  // Where [p, p + bytes) lies among the registrations (id 0 when it does not).
  PublishedBuffer find(const void* p, size_t bytes) const;

  // Local rank `r`'s published buffer mapped here (pid: its process), or nullptr when it published
  // none. `freed` is r's notice board of deregistered ids, read first.
  std::byte* peerAddress(int r, pid_t pid, const PublishedBuffer& b, const FreedNotices& freed);

 private:
  struct Local {
    shm::Shareable mem;
    int refs = 1;
  };
  struct Peer {
    std::map<uint64_t, shm::PeerMapping> maps;  // by registration id
    uint64_t noticesSeen = 0;
  };
  void dropFreed(Peer& p, const FreedNotices& freed);

  mutable std::mutex mu_;
  uint64_t nextId_ = 1;
  std::map<uint64_t, Local> local_;
  std::map<int, Peer> peers_;
};

}  // namespace conflux
