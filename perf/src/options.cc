#include "options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cfxperf {

namespace {

const char* const kTypeNames[cfxNumTypes] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                             "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
const char* const kOpNames[cfxNumOps] = {"sum", "prod", "max", "min", "avg"};

[[noreturn]] void usage(const char* prog, const char* msg) {
  if (msg) std::fprintf(stderr, "%s: %s\n", prog, msg);
  std::fprintf(stderr,
               "usage: %s [-b minbytes] [-e maxbytes] [-f stepfactor | -i stepbytes] [-n iters] [-w warmup]\n"
               "          [-c 0|1] [-o sum|prod|max|min|avg|all] [-d <type>|all] [-r root] [-z 0|1]\n"
               "          [-T timeout_s] [-J json_file] [-M auto|cuda|host] [-R 0|1]\n"
               "  types: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3 f8e5m2\n",
               prog);
  std::exit(2);
}

}  // namespace

const char* typeName(cfxDataType_t t) { return kTypeNames[t]; }
const char* opName(cfxRedOp_t op) { return kOpNames[op]; }

size_t parseSize(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  size_t mult = 1;
  if (end && *end) {
    switch (*end) {
      case 'K': case 'k': mult = size_t{1} << 10; break;
      case 'M': case 'm': mult = size_t{1} << 20; break;
      case 'G': case 'g': mult = size_t{1} << 30; break;
      default: return 0;
    }
  }
  return static_cast<size_t>(v * static_cast<double>(mult));
}

Options parseOptions(int argc, char** argv, const char* prog) {
  Options o;
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"timeout", required_argument, nullptr, 'T'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"buffers", required_argument, nullptr, 'M'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:c:o:d:r:z:T:J:M:R:t:g:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'b': o.minBytes = parseSize(optarg); break;
      case 'e': o.maxBytes = parseSize(optarg); break;
      case 'f': o.stepFactor = std::atof(optarg); break;
      case 'i': o.stepBytes = parseSize(optarg); break;
      case 'n': o.iters = std::atoi(optarg); break;
      case 'w': o.warmup = std::atoi(optarg); break;
      case 'c': o.check = std::atoi(optarg) != 0; break;
      case 'r': o.root = std::atoi(optarg); break;
      case 'z': o.blocking = std::atoi(optarg) != 0; break;
      case 'T': o.timeoutSeconds = std::atoi(optarg); break;
      case 'R': o.registered = std::atoi(optarg) != 0; break;
      case 'J': o.jsonPath = optarg; break;
      case 'M': {
        const std::string v = optarg;
        if (v == "auto") o.buffers = Options::Buffers::kAuto;
        else if (v == "cuda") o.buffers = Options::Buffers::kCuda;
        else if (v == "host") o.buffers = Options::Buffers::kHost;
        else usage(prog, "-M takes auto, cuda or host");
        break;
      }
      case 't': case 'g': break;  // nccl-tests' thread and GPU counts: one rank per process here
      case 'o': {
        o.ops.clear();
        for (int i = 0; i < cfxNumOps; ++i) {
          if (std::strcmp(optarg, "all") == 0 || std::strcmp(optarg, kOpNames[i]) == 0) {
            o.ops.push_back(static_cast<cfxRedOp_t>(i));
          }
        }
        if (o.ops.empty()) usage(prog, "unknown op");
        break;
      }
      case 'd': {
        o.types.clear();
        for (int i = 0; i < cfxNumTypes; ++i) {
          if (std::strcmp(optarg, "all") == 0 || std::strcmp(optarg, kTypeNames[i]) == 0) {
            o.types.push_back(static_cast<cfxDataType_t>(i));
          }
        }
        if (o.types.empty()) usage(prog, "unknown datatype");
        break;
      }
      case 'h': usage(prog, nullptr);
      default: usage(prog, "bad option");
    }
  }
  if (o.minBytes == 0 || o.maxBytes < o.minBytes) usage(prog, "need 0 < minbytes <= maxbytes");
  if (o.stepBytes == 0 && o.stepFactor <= 1) usage(prog, "stepfactor must be > 1");
  if (o.iters < 1 || o.warmup < 0) usage(prog, "iters must be >= 1, warmup >= 0");
  return o;
}

}  // namespace cfxperf
