// A named shared-memory segment: created by one process, opened by the others, unlinked as soon as
// all have attached, so nothing is left behind in /dev/shm if a process crashes later.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace conflux::shm {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& o) noexcept;
  Segment& operator=(Segment&& o) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates `name` (a file name, no slash) of `bytes` in CFX_SHM_DIR, reserving the memory up
  // front. Throws Error(kSystemError) naming the size needed and how to fix it if space is short.
  // `beforeReserve` runs on the mapping before any page exists (to set NUMA placement).
  static Segment create(const std::string& name, size_t bytes,
                        const std::function<void(std::byte*)>& beforeReserve = {});
  // Opens an existing segment and maps all of it.
  static Segment open(const std::string& name);

  // Maps pages [offset, offset + bytes) of this process's view now (MADV_POPULATE_WRITE), so that
  // the first calls that touch them do not take a page fault each; the contents are unchanged.
  // Returns false where the kernel cannot (before Linux 5.14): the pages then map on first touch.
  bool prefault(size_t offset, size_t bytes) const;

  void unlink();
  std::byte* data() const { return base_; }
  size_t size() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::byte* base_ = nullptr;
  size_t bytes_ = 0;
  std::string path_;
  bool owner_ = false;
  bool unlinked_ = false;
};

// Free bytes in the filesystem that holds shared-memory segments.
size_t freeShmBytes();

}  // namespace conflux::shm
