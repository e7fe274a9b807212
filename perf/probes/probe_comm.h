// What the probes on the C API share: a failed call ends the probe with the library's message, and
// the communicator comes from the launcher's environment (cfxrun).
#pragma once

#include <cstdio>
#include <cstdlib>

#include "conflux/conflux.h"

namespace cfxprobe {

inline void check(cfxResult_t r, const char* what, cfxComm_t comm) {
  if (r == cfxSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", what, cfxGetErrorString(r), cfxGetLastError(comm));
  std::exit(1);
}

struct Comm {
  cfxComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
};

inline Comm initFromEnv() {
  Comm c;
  check(cfxCommInitFromEnv(&c.comm), "cfxCommInitFromEnv", nullptr);
  check(cfxCommUserRank(c.comm, &c.rank), "cfxCommUserRank", c.comm);
  check(cfxCommCount(c.comm, &c.size), "cfxCommCount", c.comm);
  return c;
}

}  // namespace cfxprobe
