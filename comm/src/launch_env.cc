#include "launch_env.h"

#include <cstring>
#include <optional>

#include "common/env.h"
#include "common/error.h"

namespace conflux {

namespace {

std::optional<int> intFrom(const std::optional<std::string>& s, const char* name) {
  if (!s) return std::nullopt;
  char* end = nullptr;
  long v = std::strtol(s->c_str(), &end, 10);
  if (end == s->c_str() || *end != '\0') {
    throw Error(Status::kInvalidArgument, std::string(name) + "='" + *s + "' is not an integer");
  }
  return static_cast<int>(v);
}

struct RankSource {
  const char* rank;
  const char* size;
  const char* label;
};

bootstrap::Secret secretFrom(const std::string& material) {
  if (auto s = env::get("CFX_SECRET")) {
    cfxUniqueId tmp{};
    if (s->size() != 32) throw Error(Status::kInvalidArgument, "CFX_SECRET must be 32 hex digits");
    // Reuse the unique id's hex parser on a zero-padded string.
    std::string padded = *s + std::string(2 * sizeof(tmp.internal) - 32, '0');
    cfxUniqueId parsed = bootstrap::UniqueIdData::fromHex(padded);
    bootstrap::Secret out{};
    std::memcpy(out.data(), parsed.internal, out.size());
    return out;
  }
  bootstrap::Secret out{};
  uint64_t a = bootstrap::hash64(material.data(), material.size(), 1);
  uint64_t b = bootstrap::hash64(material.data(), material.size(), 2);
  std::memcpy(out.data(), &a, 8);
  std::memcpy(out.data() + 8, &b, 8);
  return out;
}

std::string jobIdentity() {
  std::string s;
  for (const char* v : {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID",
                        "SLURM_STEP_ID", "PMI_ID"}) {
    if (auto x = env::getForeign(v)) s += std::string(v) + "=" + *x + ";";
  }
  return s;
}

}  // namespace

LaunchInfo resolveLaunch() {
  LaunchInfo info;
  if (auto uid = env::get("CFX_UNIQUE_ID")) {
    info.source = "cfxrun (CFX_UNIQUE_ID)";
    info.id = bootstrap::UniqueIdData::decode(bootstrap::UniqueIdData::fromHex(*uid));
    auto rank = intFrom(env::get("CFX_RANK"), "CFX_RANK");
    auto size = intFrom(env::get("CFX_NRANKS"), "CFX_NRANKS");
    if (!rank || !size) throw Error(Status::kInvalidArgument, "CFX_UNIQUE_ID is set but CFX_RANK or CFX_NRANKS is not");
    info.rank = *rank;
    info.nranks = *size;
    return info;
  }

  static const RankSource kSources[] = {
      {"RANK", "WORLD_SIZE", "torchrun"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
      {"PMI_RANK", "PMI_SIZE", "PMI (MPICH)"},
      {"SLURM_PROCID", "SLURM_NTASKS", "Slurm"},
  };
  if (auto r = env::get("CFX_RANK")) {
    info.rank = *intFrom(r, "CFX_RANK");
    auto n = intFrom(env::get("CFX_NRANKS"), "CFX_NRANKS");
    if (!n) throw Error(Status::kInvalidArgument, "CFX_RANK is set but CFX_NRANKS is not");
    info.nranks = *n;
    info.source = "CFX_RANK/CFX_NRANKS";
  } else {
    for (const auto& s : kSources) {
      auto r = intFrom(env::getForeign(s.rank), s.rank);
      auto n = intFrom(env::getForeign(s.size), s.size);
      if (r && n) {
        info.rank = *r;
        info.nranks = *n;
        info.source = s.label;
        break;
      }
    }
  }
  if (info.rank < 0) {
    throw Error(Status::kInvalidArgument,
                "cfxCommInitFromEnv: no launcher found. Start under cfxrun, torchrun, mpirun or srun, or set "
                "CFX_RANK, CFX_NRANKS and CFX_ROOT_ADDR");
  }

  std::string rootAddr;
  if (auto a = env::get("CFX_ROOT_ADDR")) {
    rootAddr = *a;
  } else if (auto host = env::getForeign("MASTER_ADDR")) {
    auto port = intFrom(env::getForeign("MASTER_PORT"), "MASTER_PORT");
    if (!port) throw Error(Status::kInvalidArgument, "MASTER_ADDR is set but MASTER_PORT is not");
    rootAddr = *host + ":" + std::to_string(*port + env::getInt("CFX_PORT_OFFSET"));
  } else {
    auto localSize = intFrom(env::getForeign("OMPI_COMM_WORLD_LOCAL_SIZE"), "OMPI_COMM_WORLD_LOCAL_SIZE");
    auto nodes = intFrom(env::getForeign("SLURM_NNODES"), "SLURM_NNODES");
    bool singleHost = (localSize && *localSize == info.nranks) || (nodes && *nodes == 1);
    std::string job = jobIdentity();
    if (!singleHost || job.empty()) {
      throw Error(Status::kInvalidArgument, "cfxCommInitFromEnv (" + info.source +
                                                "): set CFX_ROOT_ADDR=host:port (or MASTER_ADDR and MASTER_PORT) so "
                                                "the ranks can find each other");
    }
    int port = 20000 + static_cast<int>(bootstrap::hash64(job.data(), job.size()) % 30000);
    rootAddr = "127.0.0.1:" + std::to_string(port);
  }
  info.id.root = net::SockAddr::parse(rootAddr);
  info.id.secret = secretFrom(jobIdentity() + "|" + rootAddr + "|" + std::to_string(info.nranks));
  info.runRoot = info.rank == 0;
  return info;
}

}  // namespace conflux
