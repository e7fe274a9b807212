#include "common/env.h"

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace conflux::env {

const std::vector<Variable>& registry() {
  static const std::vector<Variable> kRegistry = {
      {"CFX_DEBUG", "WARN", "Log level: NONE, VERSION, WARN, INFO or TRACE."},
      {"CFX_DEBUG_FILE", nullptr, "Write logs to this file instead of stderr; %h is the host, %p the pid."},
      {"CFX_DEBUG_DUMP_DIR", nullptr, "Directory where each process writes its communicators' flight records, <hostname>.<pid>.json, when one fails or on SIGUSR1 (read them with tools/cfx-doctor)."},
      {"CFX_DUMP_SIGNAL", "1", "1: SIGUSR1 dumps every communicator's flight record (log at WARN, and CFX_DEBUG_DUMP_DIR) without stopping anything; installed only where SIGUSR1 has no handler. 0: SIGUSR1 is left alone."},
      {"CFX_FLIGHT_RECORDER_ENTRIES", "256", "Recent operations each communicator's flight recorder keeps; 0 turns the recorder off."},
      {"CFX_TIMEOUT", "300", "Seconds any wait may go without progress before the operation fails with cfxTimeout."},
      {"CFX_BOOTSTRAP_TIMEOUT", "120", "Seconds the bootstrap waits for all ranks to join."},
      {"CFX_SPIN", "auto", "Polls of a wait before it yields and then sleeps on a futex; auto: 2000 when each local rank can have a CPU of its own (from the CPUs each may run on: ranks pinned one per core qualify), else 0 (yield at once)."},
      {"CFX_YIELDS", "auto", "Idle polls of a wait that yield the core (after CFX_SPIN's) before it sleeps on a futex; auto: 8 when each local rank can have a CPU of its own, else 1000."},
      {"CFX_RUNAHEAD", "126", "Small (latency-path) calls a rank may return before every rank's call was confirmed: how far it runs ahead of the slowest rank, and how many calls later a mismatched call fails at the latest; 1 to 126 (1: the next call)."},
      {"CFX_SHM_SLOT_BYTES", "1048576", "Bytes of each rank's collective staging slot in shared memory."},
      {"CFX_SHM_P2P_BYTES", "8388608", "Total bytes of all point-to-point channels of one communicator."},
      {"CFX_SHM_DIR", "/dev/shm", "Where shared-memory segments are created (checked for free space)."},
      {"CFX_LIVENESS_MS", "200", "Milliseconds between checks that local peers are alive while waiting."},
      {"CFX_ALGO", "auto", "Algorithm: auto, mailbox, direct or rsag on one host (comm/src/ops/tuning.h); ring, tree, rhd or flat between hosts (docs/scaling.md)."},
      {"CFX_DIRECT_MAX_BYTES", "0", "Largest AllReduce/Reduce (bytes) that uses the direct algorithm; 0: built-in rule."},
      {"CFX_CMA", "auto", "Single-copy AllGather/AlltoAll/Broadcast through process_vm_readv: auto (when the host allows it), 1 or 0."},
      {"CFX_GATHER_PATH", "auto", "AllGather and Broadcast of more than 16 MiB of output where single copies are allowed (CFX_CMA): staged, single (process_vm_readv), or auto: local rank 0 tries both per size class and every rank follows it (comm/src/ops/path_trial.h)."},
      {"CFX_CMA_MIN_BYTES", "16384", "Smallest AllGather/AlltoAll/Broadcast (bytes of output), and block of a v-collective, that uses the single copy."},
      {"CFX_CMA_REDUCE_MIN_BYTES", "auto", "Smallest AllReduce/Reduce (bytes) that reduces over single copies: auto (AllReduce 16 KiB, Reduce 64 KiB) or one number for both."},
      {"CFX_STREAMING_STORES", "auto", "Copies into user buffers of messages of 8 MiB or more: 1: streaming (non-temporal) stores; 0: ordinary stores; auto: each rank times both on its first such copies and keeps the faster (comm/src/ops/copy.h). Staged Broadcast, AllGather and AlltoAll of 16 MiB or more per rank write their slots with streaming stores unless 0."},
      {"CFX_REGISTERED", "1", "Collectives whose buffers are registered (cfxMemAlloc) on every rank run with no staging copy: 1 or 0."},
      {"CFX_REDUCE_EXACT", "0", "1: cfxSum and cfxAvg on floating-point data are exact (cfxSumExact, cfxAvgExact: the exact sum rounded once) on communicators whose config leaves reduceExact unset."},
      {"CFX_VCOLL_PADDING", "0.25", "Across hosts, AllGatherv and ReduceScatterv whose blocks padded to the largest count carry at most this fraction more data take the hierarchical AllGather or ReduceScatter on the padded blocks; 0: always rank to rank."},
      {"CFX_REGISTERED_MIN_BYTES", "1048576", "Smallest collective (bytes of its larger buffer) that checks for registered buffers (one barrier more when they are not)."},
      {"CFX_P2P_CMA_MIN_BYTES", "16384", "Smallest Send (bytes) that the receiver copies straight from the sender's buffer (with CFX_CMA); 0: never."},
      {"CFX_UNIQUE_ID", nullptr, "Hex-encoded unique id (set by cfxrun); used by cfxCommInitFromEnv."},
      {"CFX_RANK", nullptr, "This process's rank (set by cfxrun)."},
      {"CFX_NRANKS", nullptr, "Number of ranks (set by cfxrun)."},
      {"CFX_LOCAL_RANK", nullptr, "Rank among the processes of this host (set by cfxrun)."},
      {"CFX_ROOT_ADDR", nullptr, "host:port of the bootstrap root, for launchers without a unique id."},
      {"CFX_SECRET", nullptr, "32 hex digits: the bootstrap secret when CFX_ROOT_ADDR or MASTER_ADDR is used."},
      {"CFX_PORT_OFFSET", "1", "Added to MASTER_PORT for the bootstrap root (torchrun's store owns MASTER_PORT)."},
      {"CFX_NET", "auto", "Transport between hosts: auto (UCX where libibverbs finds an RDMA device, else TCP), tcp or ucx."},
      {"CFX_NSOCKS", "2", "TCP connections per pair of ranks on different hosts; messages are striped over them."},
      {"CFX_RUNTIME_CONNECT", "1", "Between hosts. TCP: 1 opens a pair's connections when either rank first needs the other (NCCL_RUNTIME_CONNECT), 0 connects every pair at init. UCX makes its endpoints at init unless this is set to 1 explicitly (UCX 1.13 can abort a rank whose endpoint is still wiring up when its peer dies)."},
      {"CFX_SOCKET_IFNAME", nullptr, "Interfaces for TCP, NCCL's syntax: prefixes (eth,ib), ^ to exclude, = for an exact name. Default: any but lo, docker*, veth*."},
      {"CFX_TOPO_FILE", nullptr, "An hwloc XML file to use as this host's topology instead of discovering it (NCCL_TOPO_FILE)."},
      {"CFX_TOPO_DUMP_FILE", nullptr, "Write the topology found (hwloc XML, with NIC kinds and speeds) to this file."},
      {"CFX_BIND", "auto", "Bind each rank's thread: none, numa (its NUMA node's CPUs) or core (cores of its node, split between its ranks); auto: numa when the host has more than one NUMA node; on one node, core when every local rank can have a core and the process may use every online CPU, else none."},
      {"CFX_IB_HCA", nullptr, "RDMA devices ranks may use, NCCL's syntax: prefixes (mlx5), ^ to exclude, = for exact names, :port ignored."},
      {"CFX_HOST_ID", nullptr, "Overrides the host identity (hostname, boot id and network namespace)."},
      {"CFX_CUDA_SLOTS", "4", "Staged GPU path: pinned staging slots per communicator, the depth of its copy-in / reduce / copy-out pipeline (at least 2)."},
      {"CFX_CUDA_CHUNK_BYTES", "4194304", "Staged GPU path: bytes of each staging slot, the largest chunk one host collective handles."},
      {"CFX_CUDA_MEMOPS", "auto", "Staged GPU path: auto orders each copy back with a stream memory operation (cuStreamWaitValue32) where the driver has them; 0 forces the fallback (a host-queued copy back)."},
  };
  return kRegistry;
}

namespace {
const Variable& lookup(const char* name) {
  for (const auto& v : registry()) {
    if (std::strcmp(v.name, name) == 0) return v;
  }
  throw Error(Status::kInternalError, std::string("environment variable not registered: ") + name);
}
}  // namespace

std::optional<std::string> get(const char* name) {
  const Variable& v = lookup(name);
  if (const char* s = std::getenv(name); s != nullptr && *s != '\0') return std::string(s);
  if (v.defaultValue != nullptr) return std::string(v.defaultValue);
  return std::nullopt;
}

std::string getString(const char* name) { return get(name).value_or(""); }

int64_t getInt(const char* name) {
  std::string s = getString(name);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || errno != 0 || end == nullptr || *end != '\0') {
    throw Error(Status::kInvalidArgument, std::string(name) + "='" + s + "' is not an integer");
  }
  return v;
}

double getDouble(const char* name) {
  std::string s = getString(name);
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == nullptr || *end != '\0') {
    throw Error(Status::kInvalidArgument, std::string(name) + "='" + s + "' is not a number");
  }
  return v;
}

std::optional<std::string> getForeign(const char* name) {
  if (const char* s = std::getenv(name); s != nullptr && *s != '\0') return std::string(s);
  return std::nullopt;
}

}  // namespace conflux::env
