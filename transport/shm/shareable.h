// Host memory that the other processes of this host can map: an anonymous memory file (memfd)
// mapped here, which a peer opens as /proc/<pid>/fd/<fd> while this process holds it. Nothing is
// ever left behind in /dev/shm, whichever process dies.
//
// The mapping's first page is a header (magic, fd, size, inode), and the caller gets the memory
// after it, so a range is recognised from its address alone: findShareable looks the address up in
// /proc/self/maps, and only a mapping of one of these files has its header read.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace conflux::shm {

// One shareable allocation: the whole mapping (header included), its file and the file's identity.
struct Shareable {
  std::byte* base = nullptr;
  size_t mapBytes = 0;
  int fd = -1;
  uint64_t inode = 0;
};

inline constexpr size_t kShareableHeaderBytes = 4096;

// `bytes` (0 allowed) of zeroed shareable memory. Throws Error(kSystemError) when the kernel refuses.
void* allocShareable(size_t bytes);
// Frees memory from allocShareable; throws Error(kInvalidArgument) for any other pointer.
void freeShareable(void* p);
// The shareable allocation holding all of [p, p + bytes), or nothing.
std::optional<Shareable> findShareable(const void* p, size_t bytes);

// Another process's shareable allocation, mapped here (unmapped when this goes).
class PeerMapping {
 public:
  PeerMapping() = default;
  // Maps process `pid`'s allocation (its fd, whole mapping size and inode, as it published them).
  // Throws Error(kSystemError) naming the file when it cannot be opened or is not that allocation.
  PeerMapping(pid_t pid, int fd, size_t mapBytes, uint64_t inode);
  ~PeerMapping();
  PeerMapping(PeerMapping&& o) noexcept;
  PeerMapping& operator=(PeerMapping&& o) noexcept;
  PeerMapping(const PeerMapping&) = delete;
  PeerMapping& operator=(const PeerMapping&) = delete;

  std::byte* base() const { return base_; }

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace conflux::shm
