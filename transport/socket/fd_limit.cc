#include "transport/socket/fd_limit.h"

#include <dirent.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.h"

namespace conflux::net {

namespace {

constexpr size_t kSlack = 64;  // files the process (and the libraries in it) open later

std::string limitText(rlim_t v) { return v == RLIM_INFINITY ? "unlimited" : std::to_string(v); }

}  // namespace

size_t openDescriptors() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  size_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n > 0 ? n - 1 : 0;  // less the directory's own descriptor
}

std::string reserveDescriptors(size_t more, const std::string& what) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  const size_t want = openDescriptors() + more + kSlack;
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= want) return {};
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want) {
    throw Error(Status::kSystemError,
                what + " needs about " + std::to_string(want) + " open files, and this process may open " +
                    limitText(lim.rlim_cur) + " (hard limit " + limitText(lim.rlim_max) +
                    "): raise the hard limit (ulimit -Hn, or LimitNOFILE= for a systemd service), or use fewer "
                    "sockets per peer (CFX_NSOCKS)");
  }
  const rlim_t before = lim.rlim_cur;
  lim.rlim_cur = static_cast<rlim_t>(want);
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
    throw Error(Status::kSystemError, what + " needs about " + std::to_string(want) +
                                          " open files; raising the soft limit from " + limitText(before) +
                                          " failed: " + std::string(std::strerror(errno)));
  }
  return "raised the open-files soft limit from " + limitText(before) + " to " + std::to_string(want) + " for " +
         what;
}

}  // namespace conflux::net
