// Where cfxCommInitFromEnv finds rank, size and rendezvous, in this order:
//   1. cfxrun:    CFX_UNIQUE_ID, CFX_RANK, CFX_NRANKS (the root runs inside cfxrun);
//   2. rank/size: CFX_RANK/CFX_NRANKS, then torchrun's RANK/WORLD_SIZE, then Open MPI's
//                 OMPI_COMM_WORLD_RANK/SIZE, then PMI_RANK/PMI_SIZE, then Slurm's
//                 SLURM_PROCID/SLURM_NTASKS;
//      rendezvous: CFX_ROOT_ADDR (host:port), else MASTER_ADDR and MASTER_PORT + CFX_PORT_OFFSET
//                 (torchrun's own store owns MASTER_PORT), else, when every rank is on this host
//                 (OMPI_COMM_WORLD_LOCAL_SIZE or SLURM_NNODES say so), 127.0.0.1 with a port
//                 derived from the job id. Rank 0 runs the bootstrap root.
//      secret:    CFX_SECRET (32 hex digits), else derived from the job's identifiers; without
//                 CFX_SECRET the bootstrap only guards against cross-talk, not against attackers.
#pragma once

#include <string>

#include "bootstrap/unique_id.h"

namespace conflux {

struct LaunchInfo {
  int rank = -1;
  int nranks = -1;
  bootstrap::UniqueIdData id;
  bool runRoot = false;   // this process must start the bootstrap root at id.root
  std::string source;     // which launcher's variables were used, for logs and errors
};

LaunchInfo resolveLaunch();

}  // namespace conflux
