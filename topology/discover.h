// Finding the machine: hwloc on the live machine, or on the XML file named by CFX_TOPO_FILE
// (NCCL's NCCL_TOPO_FILE); CFX_TOPO_DUMP_FILE writes what was found as hwloc XML, which loads back
// through CFX_TOPO_FILE. Without hwloc the model is flat (one node, this process's CPUs, no
// devices) and an INFO line says so.
//
// Live discovery also asks libibverbs for each RDMA device's link layer and speed, and sysfs for
// each Ethernet device's speed, and records them in the XML it dumps as infos on the OS devices:
//   Port1LinkLayer = InfiniBand | Ethernet, Port1RateGbps   (InfiniBand and RoCE devices)
//   LinkSpeedGbps                                            (Ethernet devices)
// A file's devices take their kind and speed from these infos (InfiniBand, speed unknown when
// absent).
#pragma once

#include <string>

#include "topology/model.h"

namespace conflux::topology {

// Throws Error(kInvalidArgument) when CFX_TOPO_FILE cannot be loaded. `dump`: honour
// CFX_TOPO_DUMP_FILE (one process per host should).
Topology discover(bool dump = true);

// The pieces discover() uses, for tests and cfx-topo. `xmlPath` empty: the live machine.
// `dumpPath` non-empty: write the hwloc XML there (a warning, not an error, when that fails).
bool haveHwloc();
Topology loadHwloc(const std::string& xmlPath, const std::string& dumpPath);

}  // namespace conflux::topology
