#include "registered_buffers.h"

namespace conflux {

void RegisteredBuffers::publish(uint64_t seq, const void* send, size_t sendBytes, const void* recv, size_t recvBytes) {
  RankControl& mine = controls_[rank_];
  mine.buffers[seq & 1][0] = send != nullptr ? registry_.find(send, sendBytes) : PublishedBuffer{};
  mine.buffers[seq & 1][1] = recv != nullptr ? registry_.find(recv, recvBytes) : PublishedBuffer{};
  mine.spansClaimed[seq & 1].store(0, std::memory_order_relaxed);  // published by the barrier that follows
}

std::byte* RegisteredBuffers::peerBuffer(int r, uint64_t seq, bool recv) {
  const PublishedBuffer& b = controls_[r].buffers[seq & 1][recv ? 1 : 0];
  return registry_.peerAddress(r, pids_[r], b, controls_[r].freed);
}

}  // namespace conflux
