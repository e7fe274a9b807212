#include "registry.h"

#include "common/error.h"

namespace conflux {

uint64_t BufferRegistry::add(const void* p, size_t bytes) {
  auto mem = shm::findShareable(p, bytes);
  if (!mem) {
    throw Error(Status::kInvalidArgument,
                "the buffer is not memory from cfxMemAlloc (only that can be registered; plain memory is staged)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, l] : local_) {
    if (l.mem.base == mem->base) {  // registered already: the same registration
      ++l.refs;
      return id;
    }
  }
  uint64_t id = nextId_++;
  local_.emplace(id, Local{*mem});
  return id;
}

bool BufferRegistry::remove(uint64_t id, FreedNotices& board) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = local_.find(id);
  if (it == local_.end()) return false;
  if (--it->second.refs > 0) return true;
  local_.erase(it);
  const uint64_t n = board.count.load(std::memory_order_relaxed);
  board.ids[n % kFreedNotices].store(id, std::memory_order_relaxed);
  board.count.store(n + 1, std::memory_order_release);
  return true;
}

PublishedBuffer BufferRegistry::find(const void* p, size_t bytes) const {
  PublishedBuffer out;
  const auto* b = static_cast<const std::byte*>(p);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, l] : local_) {
    const std::byte* user = l.mem.base + shm::kShareableHeaderBytes;
    if (b >= user && b + bytes <= l.mem.base + l.mem.mapBytes) {
      out.id = id;
      out.offset = static_cast<uint64_t>(b - l.mem.base);
      out.mapBytes = l.mem.mapBytes;
      out.inode = l.mem.inode;
      out.fd = l.mem.fd;
      return out;
    }
  }
  return out;
}

void BufferRegistry::dropFreed(Peer& p, const FreedNotices& freed) {
  const uint64_t count = freed.count.load(std::memory_order_acquire);
  if (count - p.noticesSeen > kFreedNotices) {
    p.maps.clear();  // fell behind the notice board: map again on demand
  } else {
    for (uint64_t i = p.noticesSeen; i < count; ++i) {
      p.maps.erase(freed.ids[i % kFreedNotices].load(std::memory_order_relaxed));
    }
  }
  p.noticesSeen = count;
}

std::byte* BufferRegistry::peerAddress(int r, pid_t pid, const PublishedBuffer& b, const FreedNotices& freed) {
  if (b.id == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  Peer& peer = peers_[r];
  dropFreed(peer, freed);
  auto it = peer.maps.find(b.id);
  if (it == peer.maps.end()) it = peer.maps.emplace(b.id, shm::PeerMapping(pid, b.fd, b.mapBytes, b.inode)).first;
  return it->second.base() + b.offset;
}

}  // namespace conflux
