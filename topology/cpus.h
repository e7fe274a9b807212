// The CPUs a process may run on (its affinity mask): which bounds where a plan can bind a rank; and
// whether the local ranks, each on the CPUs it may use, can each have one of its own (spinning
// waits and single copies pay only then).
#pragma once

#include <sys/types.h>

#include <vector>

namespace conflux::topology {

std::vector<int> usableCpus();  // ascending
// Those of process `pid` (its main thread's mask), ascending; empty when they cannot be read.
std::vector<int> cpusOf(pid_t pid);
// Whether each process, given the CPUs it may run on (cpus[i], ascending), can have a CPU no other
// has: a matching of processes to CPUs. Two ranks pinned to one core cannot, however many cores
// the others leave free; four ranks that may each run anywhere on two CPUs cannot either.
bool eachHasOwnCpu(const std::vector<std::vector<int>>& cpus);

}  // namespace conflux::topology
