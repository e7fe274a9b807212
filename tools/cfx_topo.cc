// cfx-topo: prints the topology Conflux finds and the plan it would make for N local ranks, as
// text or JSON (topology/report.h). It reads the same variables as the library (CFX_TOPO_FILE,
// CFX_TOPO_DUMP_FILE, CFX_BIND, CFX_IB_HCA, CFX_SOCKET_IFNAME, CFX_NET), so what it prints is
// what a communicator of N ranks on this host would do.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/error.h"
#include "topology/discover.h"
#include "topology/plan.h"
#include "topology/report.h"

namespace {

void usage(FILE* f) {
  std::fprintf(f,
               "usage: cfx-topo [--ranks N] [--json] [--file TOPO.xml]\n"
               "  --ranks N   local ranks to plan for (default: one per GPU, else 1)\n"
               "  --json      JSON instead of text\n"
               "  --file F    read the topology from hwloc XML F (as CFX_TOPO_FILE=F)\n"
               "Reads CFX_TOPO_FILE, CFX_TOPO_DUMP_FILE, CFX_BIND, CFX_IB_HCA, CFX_SOCKET_IFNAME, CFX_NET.\n");
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 0;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--ranks" && i + 1 < argc) {
      char* end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 1 || v > 4096) {
        std::fprintf(stderr, "cfx-topo: --ranks wants a number from 1 to 4096, not '%s'\n", argv[i]);
        return 2;
      }
      ranks = static_cast<int>(v);
    } else if (a == "--file" && i + 1 < argc) {
      setenv("CFX_TOPO_FILE", argv[++i], 1);
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "cfx-topo: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  try {
    using namespace conflux::topology;
    Topology topo = discover();
    if (ranks == 0) ranks = topo.gpus.empty() ? 1 : static_cast<int>(topo.gpus.size());
    Plan plan = makePlan(topo, ranks, PlanOptions::fromEnv());
    if (json) {
      std::printf("%s\n", toJson(topo, plan).c_str());
    } else {
      for (const auto& line : describeTopology(topo)) std::printf("%s\n", line.c_str());
      for (const auto& line : describePlan(topo, plan)) std::printf("%s\n", line.c_str());
    }
  } catch (const conflux::Error& e) {
    std::fprintf(stderr, "cfx-topo: %s\n", e.what());
    return 1;
  }
  return 0;
}
