// Entry points for versions, errors, communicators and streams.
#include <algorithm>
#include <climits>
#include <cstring>
#include <vector>

#include "api/checks.h"
#include "api/group.h"
#include "api/handle.h"
#include "bootstrap/root.h"
#include "common/env.h"
#include "common/log.h"
#include "launch_env.h"
#include "stream.h"

using conflux::Error;
using conflux::Status;
using namespace conflux::api;

namespace {

std::chrono::milliseconds bootstrapTimeout() {
  return std::chrono::milliseconds(static_cast<int64_t>(conflux::env::getDouble("CFX_BOOTSTRAP_TIMEOUT") * 1000));
}

conflux::Communicator::Options optionsFrom(const cfxConfig_t* config) {
  conflux::Communicator::Options o;
  if (config == nullptr) return o;
  if (config->magic != CFX_CONFIG_MAGIC || config->size < offsetof(cfxConfig_t, timeoutMs) + sizeof(int) ||
      config->version > CFX_VERSION_CODE) {
    throw Error(Status::kInvalidArgument, "config was not initialised with CFX_CONFIG_INITIALIZER");
  }
  if (config->blocking != 0 && config->blocking != 1) {
    throw Error(Status::kInvalidArgument, "config->blocking must be 0 or 1");
  }
  if (config->timeoutMs != CFX_CONFIG_UNDEF_INT) {
    if (config->timeoutMs <= 0) throw Error(Status::kInvalidArgument, "config->timeoutMs must be positive");
    o.timeoutMs = config->timeoutMs;
  }
  // A config from before the field existed is shorter: the field is then unset.
  if (config->size >= offsetof(cfxConfig_t, reduceExact) + sizeof(int) && config->reduceExact != CFX_CONFIG_UNDEF_INT) {
    if (config->reduceExact != 0 && config->reduceExact != 1) {
      throw Error(Status::kInvalidArgument, "config->reduceExact must be 0 or 1");
    }
    o.reduceExact = config->reduceExact;
  }
  return o;
}

void initRank(cfxComm_t* comm, int nranks, const conflux::bootstrap::UniqueIdData& id, int rank,
              conflux::Communicator::Options opts) {
  // A rank or size that is out of range still joins the bootstrap, so the root can tell every
  // other rank why the job cannot form; this rank then reports an invalid argument.
  bool badRank = nranks < 1 || rank < 0 || rank >= nranks;
  try {
    *comm = newHandle(conflux::Communicator::init(id, nranks, rank, opts));
  } catch (const Error& e) {
    if (badRank) throw Error(Status::kInvalidArgument, "rank " + std::to_string(rank) + " / nranks " +
                                                           std::to_string(nranks) + " is invalid: " + e.what());
    throw;
  }
}

}  // namespace

extern "C" {

cfxResult_t cfxGetVersion(int* version) {
  return guarded("cfxGetVersion", nullptr, [&] {
    if (version == nullptr) throw Error(Status::kInvalidArgument, "version is NULL");
    *version = CFX_VERSION_CODE;
  });
}

const char* cfxGetErrorString(cfxResult_t result) {
  switch (result) {
    case cfxSuccess: return "no error";
    case cfxUnhandledCudaError: return "unhandled cuda error";
    case cfxSystemError: return "unhandled system error (run with CFX_DEBUG=INFO for details)";
    case cfxInternalError: return "internal error - please report this issue to the Conflux developers";
    case cfxInvalidArgument: return "invalid argument (run with CFX_DEBUG=WARN for details)";
    case cfxInvalidUsage: return "invalid usage (run with CFX_DEBUG=WARN for details)";
    case cfxRemoteError: return "remote process exited or there was a network error";
    case cfxInProgress: return "operation in progress";
    case cfxTimeout: return "operation timed out (CFX_TIMEOUT)";
    case cfxAborted: return "communicator aborted";
    default: return "unknown result code";
  }
}

const char* cfxGetLastError(cfxComm_t comm) { return lastError(comm); }

cfxResult_t cfxGetUniqueId(cfxUniqueId* uniqueId) {
  return guarded("cfxGetUniqueId", nullptr, [&] {
    if (uniqueId == nullptr) throw Error(Status::kInvalidArgument, "uniqueId is NULL");
    conflux::bootstrap::UniqueIdData d;
    d.secret = conflux::bootstrap::randomSecret();
    d.root = conflux::bootstrap::startRoot(conflux::net::defaultHostAddress(), d.secret, bootstrapTimeout());
    *uniqueId = d.encode();
    conflux::logInfo("bootstrap root listening on " + d.root.str());
  });
}

cfxResult_t cfxCommInitRankConfig(cfxComm_t* comm, int nranks, cfxUniqueId commId, int rank, cfxConfig_t* config) {
  return guarded("cfxCommInitRank", nullptr, [&] {
    if (comm == nullptr) throw Error(Status::kInvalidArgument, "comm is NULL");
    *comm = nullptr;
    initRank(comm, nranks, conflux::bootstrap::UniqueIdData::decode(commId), rank, optionsFrom(config));
  });
}

cfxResult_t cfxCommInitRank(cfxComm_t* comm, int nranks, cfxUniqueId commId, int rank) {
  return cfxCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

cfxResult_t cfxCommInitFromEnv(cfxComm_t* comm) {
  return guarded("cfxCommInitFromEnv", nullptr, [&] {
    if (comm == nullptr) throw Error(Status::kInvalidArgument, "comm is NULL");
    *comm = nullptr;
    conflux::LaunchInfo info = conflux::resolveLaunch();
    conflux::logInfo("cfxCommInitFromEnv: rank " + std::to_string(info.rank) + " of " + std::to_string(info.nranks) +
                     " from " + info.source + ", root " + info.id.root.str());
    if (info.runRoot) {
      try {
        conflux::bootstrap::startRoot(info.id.root, info.id.secret, bootstrapTimeout());
      } catch (const Error& e) {
        // MASTER_ADDR may name this host by an address we cannot bind: listen on all of them.
        conflux::net::SockAddr any = conflux::net::SockAddr::parse("0.0.0.0:0");
        any.setPort(info.id.root.port());
        conflux::logInfo(std::string("bootstrap root: ") + e.what() + "; listening on " + any.str());
        conflux::bootstrap::startRoot(any, info.id.secret, bootstrapTimeout());
      }
    }
    initRank(comm, info.nranks, info.id, info.rank, {});
  });
}

cfxResult_t cfxCommSplit(cfxComm_t comm, int color, int key, cfxComm_t* newcomm, cfxConfig_t* config) {
  return guarded("cfxCommSplit", comm, [&] {
    if (newcomm == nullptr) throw Error(Status::kInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    if (color < 0 && color != CFX_SPLIT_NOCOLOR) {
      throw Error(Status::kInvalidArgument, "color " + std::to_string(color) +
                                                " is negative (use a color >= 0, or CFX_SPLIT_NOCOLOR)");
    }
    auto opts = optionsFrom(config);
    CommRef ref(comm);
    if (opts.reduceExact < 0) opts.reduceExact = ref->reduceExact() ? 1 : 0;
    if (auto child = ref->split(color, key, opts)) *newcomm = newHandle(std::move(child));
  });
}

cfxResult_t cfxCommShrink(cfxComm_t comm, const int* excludeRanks, int excludeCount, cfxComm_t* newcomm,
                          cfxConfig_t* config, int flags) {
  return guarded("cfxCommShrink", comm, [&] {
    if (newcomm == nullptr) throw Error(Status::kInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    CommRef ref(comm);
    const int n = ref->size();
    if (flags != CFX_SHRINK_DEFAULT && flags != CFX_SHRINK_ABORT) {
      throw Error(Status::kInvalidArgument, "flags " + std::to_string(flags) +
                                                " is neither CFX_SHRINK_DEFAULT (0) nor CFX_SHRINK_ABORT (1)");
    }
    if (excludeCount < 0 || excludeCount >= n) {
      throw Error(Status::kInvalidArgument, "excludeCount " + std::to_string(excludeCount) + " is not in [0, " +
                                                std::to_string(n - 1) + "] for a communicator of " + std::to_string(n) +
                                                " ranks");
    }
    if (excludeCount > 0 && excludeRanks == nullptr) throw Error(Status::kInvalidArgument, "excludeRanks is NULL");
    std::vector<int> excluded(excludeRanks, excludeRanks + excludeCount);
    std::sort(excluded.begin(), excluded.end());
    for (size_t i = 0; i < excluded.size(); ++i) {
      if (excluded[i] < 0 || excluded[i] >= n) {
        throw Error(Status::kInvalidArgument, "excludeRanks holds " + std::to_string(excluded[i]) +
                                                  ", not a rank of this communicator of " + std::to_string(n));
      }
      if (i > 0 && excluded[i] == excluded[i - 1]) {
        throw Error(Status::kInvalidArgument, "excludeRanks holds rank " + std::to_string(excluded[i]) + " twice");
      }
    }
    if (std::binary_search(excluded.begin(), excluded.end(), ref->rank())) {
      throw Error(Status::kInvalidArgument, "excludeRanks holds this rank (" + std::to_string(ref->rank()) +
                                                "): excluded ranks do not call cfxCommShrink");
    }
    auto opts = optionsFrom(config);
    if (opts.reduceExact < 0) opts.reduceExact = ref->reduceExact() ? 1 : 0;
    *newcomm = newHandle(ref->shrink(excluded, flags == CFX_SHRINK_ABORT, opts));
  });
}

cfxResult_t cfxCommGetFailedRanks(cfxComm_t comm, int* failedRanks, int capacity, int* count) {
  return guarded("cfxCommGetFailedRanks", comm, [&] {
    CommRef ref(comm);
    if (count == nullptr) throw Error(Status::kInvalidArgument, "count is NULL");
    if (capacity < 0) throw Error(Status::kInvalidArgument, "capacity " + std::to_string(capacity) + " is negative");
    if (capacity > 0 && failedRanks == nullptr) throw Error(Status::kInvalidArgument, "failedRanks is NULL");
    std::vector<int> failed = ref->failedRanks(std::chrono::seconds(1));
    std::copy_n(failed.begin(), std::min<size_t>(failed.size(), static_cast<size_t>(capacity)), failedRanks);
    *count = static_cast<int>(failed.size());
  });
}

cfxResult_t cfxCommDestroy(cfxComm_t comm) {
  return guarded("cfxCommDestroy", comm, [&] {
    retire(comm);
    comm->impl.reset();  // drains queued work, stops the progress thread, unmaps shared memory
  });
}

cfxResult_t cfxCommAbort(cfxComm_t comm) {
  return guarded("cfxCommAbort", comm, [&] {
    if (comm == nullptr) throw Error(Status::kInvalidArgument, "comm is NULL");
    if (comm->state.load() == cfxComm::kAlive && comm->impl) comm->impl->abort();
    retire(comm);
    comm->impl.reset();
  });
}

cfxResult_t cfxCommCount(const cfxComm_t comm, int* count) {
  return guarded("cfxCommCount", comm, [&] {
    CommRef ref(comm);
    if (count == nullptr) throw Error(Status::kInvalidArgument, "count is NULL");
    *count = ref->size();
  });
}

cfxResult_t cfxCommUserRank(const cfxComm_t comm, int* rank) {
  return guarded("cfxCommUserRank", comm, [&] {
    CommRef ref(comm);
    if (rank == nullptr) throw Error(Status::kInvalidArgument, "rank is NULL");
    *rank = ref->rank();
  });
}

cfxResult_t cfxCommHost(const cfxComm_t comm, int* host, int* nhosts) {
  return guarded("cfxCommHost", comm, [&] {
    CommRef ref(comm);
    if (host == nullptr || nhosts == nullptr) throw Error(Status::kInvalidArgument, "host or nhosts is NULL");
    *host = ref->hosts().hostOf[ref->rank()];
    *nhosts = ref->hosts().nhosts();
  });
}

cfxResult_t cfxCommGetTimeout(const cfxComm_t comm, int* timeoutMs) {
  return guarded("cfxCommGetTimeout", comm, [&] {
    CommRef ref(comm);
    if (timeoutMs == nullptr) throw Error(Status::kInvalidArgument, "timeoutMs is NULL");
    const auto ms = ref->context().wait().timeout.count();
    *timeoutMs = static_cast<int>(std::min<int64_t>(ms, INT32_MAX));
  });
}

cfxResult_t cfxCommGetSpin(const cfxComm_t comm, int* spinPolls) {
  return guarded("cfxCommGetSpin", comm, [&] {
    CommRef ref(comm);
    if (spinPolls == nullptr) throw Error(Status::kInvalidArgument, "spinPolls is NULL");
    *spinPolls = ref->context().wait().spin;
  });
}

cfxResult_t cfxCommGetAsyncError(cfxComm_t comm, cfxResult_t* asyncError) {
  return guarded("cfxCommGetAsyncError", comm, [&] {
    CommRef ref(comm);
    if (asyncError == nullptr) throw Error(Status::kInvalidArgument, "asyncError is NULL");
    *asyncError = toResult(ref->engine().asyncError().status);
  });
}

cfxResult_t cfxStreamCreate(cfxStream_t* stream) {
  return guarded("cfxStreamCreate", nullptr, [&] {
    if (stream == nullptr) throw Error(Status::kInvalidArgument, "stream is NULL");
    *stream = new conflux::Stream();
  });
}

cfxResult_t cfxStreamSynchronize(cfxStream_t stream) {
  conflux::Outcome o;
  cfxResult_t r = guarded("cfxStreamSynchronize", nullptr, [&] {
    checkStream(stream);
    if (stream != nullptr) o = static_cast<conflux::Stream*>(stream)->synchronize();
  });
  if (r != cfxSuccess || o.ok()) return r;
  return fail("cfxStreamSynchronize", nullptr, o.status, o.message);
}

cfxResult_t cfxStreamQuery(cfxStream_t stream) {
  conflux::Outcome o;
  cfxResult_t r = guarded("cfxStreamQuery", nullptr, [&] {
    checkStream(stream);
    if (stream != nullptr) o = static_cast<conflux::Stream*>(stream)->query();
  });
  if (r != cfxSuccess || o.ok()) return r;
  if (o.status == Status::kInProgress) return cfxInProgress;
  return fail("cfxStreamQuery", nullptr, o.status, o.message);
}

cfxResult_t cfxStreamDestroy(cfxStream_t stream) {
  return guarded("cfxStreamDestroy", nullptr, [&] {
    if (stream == nullptr) throw Error(Status::kInvalidArgument, "stream is NULL");
    checkStream(stream);
    auto* s = static_cast<conflux::Stream*>(stream);
    s->synchronize();
    delete s;
  });
}

cfxResult_t cfxGroupStart(void) {
  return guarded("cfxGroupStart", nullptr, [] { groupStart(); });
}

cfxResult_t cfxGroupEnd(void) {
  return guarded("cfxGroupEnd", nullptr, [] { groupEnd(); });
}

}  // extern "C"
