// The CPUs this process may run on (its affinity mask): how many decides whether local ranks can
// each have a core; which bounds where a plan can bind a rank.
#pragma once

#include <vector>

namespace conflux::topology {

int usableCpuCount();
std::vector<int> usableCpus();  // ascending

}  // namespace conflux::topology
