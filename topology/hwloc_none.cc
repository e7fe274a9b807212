// discover.h without hwloc: no loader; discover() falls back to the flat model.
#include "common/error.h"
#include "topology/discover.h"

namespace conflux::topology {

bool haveHwloc() { return false; }

Topology loadHwloc(const std::string& xmlPath, const std::string&) {
  throw Error(Status::kInvalidArgument,
              "CFX_TOPO_FILE=" + xmlPath + ": this build of Conflux has no hwloc to read topology files");
}

}  // namespace conflux::topology
