// How many CPUs this process may run on (its affinity mask), the number that decides whether
// local ranks can each have a core.
#pragma once

namespace conflux::topology {

int usableCpuCount();

}  // namespace conflux::topology
