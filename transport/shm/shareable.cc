#include "transport/shm/shareable.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "common/arith.h"
#include "common/error.h"

namespace conflux::shm {

namespace {

constexpr uint64_t kMagic = 0x43465853484152ull;  // "CFXSHAR"
constexpr char kFileName[] = "cfx-shareable";

struct Header {
  uint64_t magic;
  uint64_t mapBytes;
  uint64_t inode;
  int32_t fd;
};

Header& headerOf(std::byte* base) { return *reinterpret_cast<Header*>(base); }

}  // namespace

void* allocShareable(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // At least one page after the header, so the pointer returned lies inside the mapping.
  const size_t mapBytes = kShareableHeaderBytes + std::max<size_t>(1, ceilDiv(bytes, page)) * page;
  int fd = memfd_create(kFileName, MFD_CLOEXEC);
  if (fd < 0) throwSystemError("memfd_create for " + std::to_string(bytes) + " shareable bytes", errno);
  struct stat st{};
  if (ftruncate(fd, static_cast<off_t>(mapBytes)) != 0 || fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    throwSystemError("sizing " + std::to_string(mapBytes) + " bytes of shareable memory", e);
  }
  void* p = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    throwSystemError("mapping " + std::to_string(mapBytes) + " bytes of shareable memory", e);
  }
  auto* base = static_cast<std::byte*>(p);
  headerOf(base) = Header{kMagic, mapBytes, static_cast<uint64_t>(st.st_ino), fd};
  return base + kShareableHeaderBytes;
}

std::optional<Shareable> findShareable(const void* p, size_t bytes) {
  if (p == nullptr) return std::nullopt;
  const auto addr = reinterpret_cast<uintptr_t>(p);
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return std::nullopt;
  std::optional<Shareable> found;
  char line[512];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) != 2 || addr < lo || addr >= hi) continue;
    // The mapping holding p: one of ours only if its file is a memfd of our name.
    if (std::strstr(line, "/memfd:cfx-shareable") == nullptr || addr + bytes > hi) break;
    auto* base = reinterpret_cast<std::byte*>(lo);
    const Header& h = headerOf(base);
    if (h.magic != kMagic || h.mapBytes != hi - lo) break;
    found = Shareable{base, h.mapBytes, h.fd, h.inode};
    break;
  }
  std::fclose(maps);
  return found;
}

void freeShareable(void* p) {
  auto s = findShareable(p, 0);
  if (!s || s->base + kShareableHeaderBytes != p) {
    throw Error(Status::kInvalidArgument, "the pointer was not returned by cfxMemAlloc (or was freed already)");
  }
  int fd = s->fd;
  munmap(s->base, s->mapBytes);
  close(fd);
}

PeerMapping::PeerMapping(pid_t pid, int fd, size_t mapBytes, uint64_t inode) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  int local = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (local < 0) throwSystemError("opening a peer's registered buffer " + path, errno);
  struct stat st{};
  if (fstat(local, &st) != 0 || static_cast<uint64_t>(st.st_ino) != inode ||
      static_cast<size_t>(st.st_size) < mapBytes) {
    close(local);
    throw Error(Status::kSystemError, path + " is not the registered buffer its process published (freed early?)");
  }
  void* m = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, local, 0);
  int e = errno;
  close(local);
  if (m == MAP_FAILED) throwSystemError("mapping a peer's registered buffer " + path, e);
  base_ = static_cast<std::byte*>(m);
  bytes_ = mapBytes;
}

PeerMapping::~PeerMapping() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

PeerMapping::PeerMapping(PeerMapping&& o) noexcept { *this = std::move(o); }

PeerMapping& PeerMapping::operator=(PeerMapping&& o) noexcept {
  std::swap(base_, o.base_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

}  // namespace conflux::shm
