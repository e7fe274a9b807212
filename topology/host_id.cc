#include "topology/host_id.h"

#include <unistd.h>

#include <fstream>

#include "common/env.h"

namespace conflux::topology {

std::string hostId() {
  if (auto forced = env::get("CFX_HOST_ID")) return *forced;
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char ns[128] = {0};
  ssize_t n = readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
  if (n < 0) n = 0;
  ns[n] = '\0';
  return std::string(host) + "/" + boot + "/" + ns;
}

}  // namespace conflux::topology
