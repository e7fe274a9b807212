// nccl-tests' command line: -b -e -f -i (sizes, K/M/G suffixes), -n iterations, -w warm-up,
// -c check, -o op (or all), -d datatype (or all), -r root, -z blocking, -T timeout, -J JSON file;
// -R 1 registered buffers (nccl-tests' flag: the backend's own shareable memory, cfxMemAlloc for
// Conflux); and Conflux's -M buffers: cuda (nccl-tests' way), host, or auto (cuda when the backend and the
// machine have it).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "conflux/conflux.h"

namespace cfxperf {

struct Options {
  size_t minBytes = 32 << 20;
  size_t maxBytes = 32 << 20;
  double stepFactor = 2;   // -f
  size_t stepBytes = 0;    // -i (used when non-zero)
  int iters = 20;
  int warmup = 1;
  bool check = true;
  std::vector<cfxRedOp_t> ops = {cfxSum};
  std::vector<cfxDataType_t> types = {cfxFloat32};
  int root = 0;
  bool blocking = false;
  int timeoutSeconds = 0;
  std::string jsonPath;
  enum class Buffers { kAuto, kHost, kCuda } buffers = Buffers::kAuto;
  bool registered = false;  // -R 1 (or 2)
};

// Parses argv (exits with usage on error).
Options parseOptions(int argc, char** argv, const char* prog);
size_t parseSize(const std::string& s);
const char* typeName(cfxDataType_t t);
const char* opName(cfxRedOp_t op);

}  // namespace cfxperf
