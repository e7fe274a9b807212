#include "transport/shm/liveness.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace conflux::shm {

namespace {

// /proc/<pid>/stat after the command's closing ')': " S ppid pgrp session tty tpgid flags ...";
// empty when the process is gone.
std::string statFields(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return "";
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr || close[1] == '\0' || close[2] == '\0') return "?";
  return close + 1;
}

constexpr unsigned long kPfExiting = 0x4;  // the kernel's PF_EXITING: do_exit has begun

}  // namespace

char processState(pid_t pid) {
  std::string f = statFields(pid);
  if (f.empty()) return 0;
  if (f.size() < 2) return '?';
  return f[1];
}

bool processGone(pid_t pid) {
  std::string f = statFields(pid);
  if (f.size() < 2) return f.empty();
  const char state = f[1];
  if (state == 'Z' || state == 'X' || state == 'x') return true;
  char st = 0;
  long skip = 0;
  unsigned long flags = 0;
  if (std::sscanf(f.c_str(), " %c %ld %ld %ld %ld %ld %lu", &st, &skip, &skip, &skip, &skip, &skip, &flags) != 7) return false;
  return (flags & kPfExiting) != 0;
}

bool processAlive(pid_t pid) {
  char state = processState(pid);
  return state != 0 && state != 'Z' && state != 'X' && state != 'x';
}

}  // namespace conflux::shm
