#include "topology/discover.h"

#include <mutex>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "topology/cpus.h"

namespace conflux::topology {

Topology discover(bool dumpIt) {
  // One discovery at a time per process: hwloc reads devices through libudev, which is not safe to
  // enter from several threads at once (TSan saw a race inside it when one process initialised
  // several communicators together, as ncclCommInitAll does). The only process-wide state here.
  static std::mutex oneAtATime;
  std::lock_guard<std::mutex> lock(oneAtATime);
  const std::string file = env::getString("CFX_TOPO_FILE");
  const std::string dump = dumpIt ? env::getString("CFX_TOPO_DUMP_FILE") : std::string();
  if (!haveHwloc()) {
    if (!file.empty()) loadHwloc(file, dump);  // throws: the file cannot be honoured
    logInfo("TOPO this build of Conflux has no hwloc: flat topology (one NUMA node, this process's CPUs, no devices)");
    if (!dump.empty()) logInfo("TOPO CFX_TOPO_DUMP_FILE ignored: nothing to dump without hwloc");
    return flatTopology(usableCpus(), "built without hwloc");
  }
  if (!file.empty()) return loadHwloc(file, dump);
  try {
    return loadHwloc("", dump);
  } catch (const Error& e) {
    logInfo(std::string("TOPO ") + e.what() + ": flat topology (one NUMA node, this process's CPUs, no devices)");
    return flatTopology(usableCpus(), e.what());
  }
}

}  // namespace conflux::topology
