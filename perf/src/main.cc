// One main for every perf binary: the collective comes from the program's name, as with
// nccl-tests' binaries (all_reduce_perf, all_reduce_perf_mpi, all_reduce_perf_gloo, ...).
#include <cstdio>
#include <cstring>
#include <string>

#include "runner.h"

int main(int argc, char** argv) {
  std::string name = argv[0];
  if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
  struct Entry {
    const char* prefix;
    cfxperf::Coll coll;
  };
  static const Entry kEntries[] = {
      {"all_reduce_perf", cfxperf::Coll::kAllReduce},   {"all_gather_perf", cfxperf::Coll::kAllGather},
      {"reduce_scatter_perf", cfxperf::Coll::kReduceScatter}, {"alltoall_perf", cfxperf::Coll::kAlltoAll},
      {"broadcast_perf", cfxperf::Coll::kBroadcast},    {"reduce_perf", cfxperf::Coll::kReduce},
      {"sendrecv_perf", cfxperf::Coll::kSendRecv},      {"alltoallv_perf", cfxperf::Coll::kAlltoAllv},
  };
  for (const auto& e : kEntries) {
    if (name.rfind(e.prefix, 0) == 0) return cfxperf::runPerf(e.coll, argc, argv);
  }
  std::fprintf(stderr, "%s: the program name must start with a collective (all_reduce_perf, ...)\n", argv[0]);
  return 2;
}
