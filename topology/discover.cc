#include "topology/discover.h"

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "topology/cpus.h"

namespace conflux::topology {

Topology discover(bool dumpIt) {
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
