#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"

namespace conflux::shm {

namespace {

std::string shmDir() { return env::getString("CFX_SHM_DIR"); }

std::string mib(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

[[noreturn]] void throwNoSpace(size_t needed, size_t freeBytes) {
  throw Error(Status::kSystemError,
              "shared memory: a segment of " + mib(needed) + " is needed but " + shmDir() + " has only " +
                  mib(freeBytes) + " free. Enlarge it (docker: --shm-size=1g or --ipc=host; otherwise: mount -o "
                  "remount,size=1G " + shmDir() + "), or lower CFX_SHM_SLOT_BYTES / CFX_SHM_P2P_BYTES.");
}

std::byte* mapFd(int fd, size_t bytes, const std::string& path) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throwSystemError("mmap " + path, errno);
  return static_cast<std::byte*>(p);
}

}  // namespace

size_t freeShmBytes() {
  struct statvfs st{};
  if (statvfs(shmDir().c_str(), &st) != 0) return 0;
  return static_cast<size_t>(st.f_bavail) * st.f_frsize;
}

bool Segment::prefault(size_t offset, size_t bytes) const {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14 (older headers lack the name)
#endif
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(bytes_, offset + bytes);
  if (base_ == nullptr || begin >= end) return true;
  return madvise(base_ + begin, end - begin, MADV_POPULATE_WRITE) == 0;
}

Segment::~Segment() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (owner_ && !unlinked_) ::unlink(path_.c_str());
}

Segment::Segment(Segment&& o) noexcept { *this = std::move(o); }

Segment& Segment::operator=(Segment&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
  std::swap(path_, o.path_);
  std::swap(owner_, o.owner_);
  std::swap(unlinked_, o.unlinked_);
  return *this;
}

Segment Segment::create(const std::string& name, size_t bytes, const std::function<void(std::byte*)>& beforeReserve) {
  Segment s;
  s.path_ = shmDir() + "/" + name;
  size_t freeBytes = freeShmBytes();
  if (freeBytes < bytes) throwNoSpace(bytes, freeBytes);
  int fd = ::open(s.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throwSystemError("create shared memory " + s.path_, errno);
  s.owner_ = true;
  try {
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) throwSystemError("size shared memory " + s.path_, errno);
    s.base_ = mapFd(fd, bytes, s.path_);
    s.bytes_ = bytes;
    if (beforeReserve) beforeReserve(s.base_);
    // Reserve the pages now: a short /dev/shm must fail here with a clear message, not with SIGBUS
    // on first touch in the middle of a collective. (Pages come from the placement set above.)
    int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (rc == ENOSPC) throwNoSpace(bytes, freeShmBytes());
    if (rc != 0) throwSystemError("reserve " + mib(bytes) + " of shared memory in " + s.path_, rc);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  logTrace("created shared memory " + s.path_ + " of " + mib(bytes));
  return s;
}

Segment Segment::open(const std::string& name) {
  Segment s;
  s.path_ = shmDir() + "/" + name;
  int fd = ::open(s.path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throwSystemError("open shared memory " + s.path_, errno);
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throwSystemError("stat " + s.path_, e);
  }
  try {
    s.base_ = mapFd(fd, static_cast<size_t>(st.st_size), s.path_);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  s.bytes_ = static_cast<size_t>(st.st_size);
  return s;
}

void Segment::unlink() {
  if (!unlinked_ && !path_.empty()) {
    ::unlink(path_.c_str());
    unlinked_ = true;
  }
}

}  // namespace conflux::shm
