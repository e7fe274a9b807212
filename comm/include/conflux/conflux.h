/*
 * Conflux: collective communication for distributed training.
 *
 * The API follows NCCL's shape and semantics with the prefix `cfx`, so that porting from NCCL is a
 * rename: datatypes, reduction ops and result codes carry NCCL's names and enum values.
 *
 * Thread safety: a communicator may be used from several threads, but operations on one
 * communicator must be issued in the same order on every rank (as in NCCL). Group state
 * (cfxGroupStart/End) is per thread, as in NCCL.
 */
#ifndef CONFLUX_CONFLUX_H_
#define CONFLUX_CONFLUX_H_

#include <stddef.h>
#include <stdint.h>

#define CFX_MAJOR 0
#define CFX_MINOR 1
#define CFX_PATCH 0
#define CFX_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define CFX_VERSION_CODE CFX_VERSION(CFX_MAJOR, CFX_MINOR, CFX_PATCH)

#if defined(__GNUC__)
#define CFX_API __attribute__((visibility("default")))
#else
#define CFX_API
#endif

/* In C++ the enums get a fixed `int` base: C callers may pass any int, and the library must be able
 * to hold an invalid value in order to reject it (same size and ABI as the C enums). */
#ifdef __cplusplus
#define CFX_ENUM_BASE : int
#else
#define CFX_ENUM_BASE
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfxComm* cfxComm_t;
typedef void* cfxStream_t;

#define CFX_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[CFX_UNIQUE_ID_BYTES];
} cfxUniqueId;

typedef enum CFX_ENUM_BASE {
  cfxSuccess = 0,
  cfxUnhandledCudaError = 1,
  cfxSystemError = 2,
  cfxInternalError = 3,
  cfxInvalidArgument = 4,
  cfxInvalidUsage = 5,
  cfxRemoteError = 6,
  cfxInProgress = 7,
  cfxTimeout = 8,
  cfxAborted = 9,
  cfxNumResults = 10
} cfxResult_t;

typedef enum CFX_ENUM_BASE {
  cfxInt8 = 0,
  cfxChar = 0,
  cfxUint8 = 1,
  cfxInt32 = 2,
  cfxInt = 2,
  cfxUint32 = 3,
  cfxInt64 = 4,
  cfxUint64 = 5,
  cfxFloat16 = 6,
  cfxHalf = 6,
  cfxFloat32 = 7,
  cfxFloat = 7,
  cfxFloat64 = 8,
  cfxDouble = 8,
  cfxBfloat16 = 9,
  cfxFloat8e4m3 = 10,
  cfxFloat8e5m2 = 11,
  cfxNumTypes = 12
} cfxDataType_t;

typedef enum CFX_ENUM_BASE {
  cfxSum = 0,
  cfxProd = 1,
  cfxMax = 2,
  cfxMin = 3,
  cfxAvg = 4,
  cfxNumOps = 5,
  /* Conflux extension, outside NCCL's range as NCCL's own custom ops are: the exact reductions.
   * Each output element is the exact sum of every rank's element (Avg: divided by the number of
   * ranks) rounded once to nearest even, so its bits do not depend on the algorithm, the message
   * size, the number of hosts or the transport. Integer types are exact already: there they are
   * cfxSum and cfxAvg. A communicator whose config sets reduceExact (or CFX_REDUCE_EXACT=1) makes
   * every cfxSum and cfxAvg on floating-point data exact. README, "Exact reductions". */
  cfxSumExact = 64,
  cfxAvgExact = 65
} cfxRedOp_t;

/* Passed as `color` to cfxCommSplit: this rank joins no new communicator (newcomm = NULL). */
#define CFX_SPLIT_NOCOLOR (-1)

/* Communicator configuration. Initialise with CFX_CONFIG_INITIALIZER, then set fields. */
typedef struct {
  size_t size;            /* sizeof(cfxConfig_t), set by the initializer */
  unsigned int magic;     /* CFX_CONFIG_MAGIC, set by the initializer */
  unsigned int version;   /* CFX_VERSION_CODE, set by the initializer */
  int blocking;           /* 1 (default): calls complete before returning; 0 is accepted and behaves the same */
  int timeoutMs;          /* per-wait timeout in milliseconds; CFX_CONFIG_UNDEF_INT: CFX_TIMEOUT or the default */
  int reduceExact;        /* 1: cfxSum and cfxAvg on floating-point data are cfxSumExact and cfxAvgExact; 0: not;
                             CFX_CONFIG_UNDEF_INT: CFX_REDUCE_EXACT (default 0), or the parent's for split and shrink */
} cfxConfig_t;

#define CFX_CONFIG_MAGIC 0xcf7c0f16u
#define CFX_CONFIG_UNDEF_INT (-2147483647 - 1)
#define CFX_CONFIG_INITIALIZER \
  { sizeof(cfxConfig_t), CFX_CONFIG_MAGIC, CFX_VERSION_CODE, 1, CFX_CONFIG_UNDEF_INT, CFX_CONFIG_UNDEF_INT }

/* Version and errors. */
CFX_API cfxResult_t cfxGetVersion(int* version);
CFX_API const char* cfxGetErrorString(cfxResult_t result);
/* The last error message of `comm`; with comm == NULL, the calling thread's last error. A failed
 * cfxGroupEnd sets it on every communicator of the group. */
CFX_API const char* cfxGetLastError(cfxComm_t comm);

/* Communicator creation and teardown. */
CFX_API cfxResult_t cfxGetUniqueId(cfxUniqueId* uniqueId);
CFX_API cfxResult_t cfxCommInitRank(cfxComm_t* comm, int nranks, cfxUniqueId commId, int rank);
CFX_API cfxResult_t cfxCommInitRankConfig(cfxComm_t* comm, int nranks, cfxUniqueId commId, int rank,
                                          cfxConfig_t* config);
/* Reads rank, size and rendezvous from the environment: CFX_*, torchrun, Open MPI, Slurm. */
CFX_API cfxResult_t cfxCommInitFromEnv(cfxComm_t* comm);
CFX_API cfxResult_t cfxCommSplit(cfxComm_t comm, int color, int key, cfxComm_t* newcomm, cfxConfig_t* config);
/* As NCCL 2.27's ncclCommShrink: every rank of `comm` that is not in excludeRanks calls it, and they
 * get a new communicator of themselves, ranked in their order in `comm`. It is formed without rank 0
 * and without any collective of `comm` (the first survivor serves a new bootstrap on a socket every
 * rank has known since `comm` formed), so it works after a failure, within the communicator's
 * timeout (and CFX_BOOTSTRAP_TIMEOUT); a survivor that dies meanwhile fails it on every rank, named.
 * flags: CFX_SHRINK_DEFAULT lets `comm`'s pending work complete first; CFX_SHRINK_ABORT aborts it
 * first (after a failure). `comm` stays to be destroyed or aborted. Excluded ranks do not call it. */
#define CFX_SHRINK_DEFAULT 0x00
#define CFX_SHRINK_ABORT 0x01
CFX_API cfxResult_t cfxCommShrink(cfxComm_t comm, const int* excludeRanks, int excludeCount, cfxComm_t* newcomm,
                                  cfxConfig_t* config, int flags);
/* Conflux extension: the ranks of `comm` whose processes are gone, ascending, so that survivors
 * agree on cfxCommShrink's excludeRanks: on this host by their pids, on other hosts by the sockets
 * they listen at (a refused connection, or none within a second). A rank that is alive but stalled
 * is not listed (the timeout's message names it). Writes at most `capacity` ranks; *count is how
 * many there are. Works on a failed communicator. */
CFX_API cfxResult_t cfxCommGetFailedRanks(cfxComm_t comm, int* failedRanks, int capacity, int* count);
CFX_API cfxResult_t cfxCommDestroy(cfxComm_t comm);
CFX_API cfxResult_t cfxCommAbort(cfxComm_t comm);
CFX_API cfxResult_t cfxCommCount(const cfxComm_t comm, int* count);
CFX_API cfxResult_t cfxCommUserRank(const cfxComm_t comm, int* rank);
CFX_API cfxResult_t cfxCommGetAsyncError(cfxComm_t comm, cfxResult_t* asyncError);
/* Conflux extension: which host this rank is on (hosts numbered 0..nhosts-1 in order of their lowest
 * rank) and how many hosts the communicator spans. Splitting by `host` gives per-host communicators. */
CFX_API cfxResult_t cfxCommHost(const cfxComm_t comm, int* host, int* nhosts);
/* Conflux extension: how long any wait of this communicator may go without progress before it fails
 * with cfxTimeout (its config's timeoutMs, else CFX_TIMEOUT), in milliseconds. Libraries layered on a
 * communicator (the staged GPU path) bound their own waits with it. */
CFX_API cfxResult_t cfxCommGetTimeout(const cfxComm_t comm, int* timeoutMs);
/* Conflux extension: how many times a wait of this communicator polls before it yields its CPU
 * (CFX_SPIN; auto: 2000 when each rank of this host can have a CPU of its own, judged from the CPUs
 * each may run on, else 0). Libraries layered on a communicator (the PyTorch backend's worker) let
 * their own waits spin only when it is above 0. */
CFX_API cfxResult_t cfxCommGetSpin(const cfxComm_t comm, int* spinPolls);

/* Host streams: operations issued on one run asynchronously, in issue order. NULL means blocking. */
CFX_API cfxResult_t cfxStreamCreate(cfxStream_t* stream);
CFX_API cfxResult_t cfxStreamSynchronize(cfxStream_t stream);
CFX_API cfxResult_t cfxStreamQuery(cfxStream_t stream);
CFX_API cfxResult_t cfxStreamDestroy(cfxStream_t stream);

/* Registered buffers (Conflux extension; NCCL's ncclMemAlloc and ncclCommRegister, on the host).
 * cfxMemAlloc returns `size` bytes of zeroed host memory that the other processes of this host can
 * map, registered with `comm` (NULL: with none). A collective whose buffers lie in such memory,
 * registered with its communicator on every rank, runs with no staging copy: AllReduce, Reduce,
 * ReduceScatter, AllGather and Broadcast on one host, from CFX_REGISTERED_MIN_BYTES bytes; the
 * results are bitwise those of the staged path. Where any rank's buffer is not registered, every
 * rank takes the staged path. cfxMemFree deregisters the memory from `comm` (NULL: none) and frees
 * it; deregister it from other communicators first. cfxCommRegister registers memory from
 * cfxMemAlloc with another communicator (`buff`..`buff+size` must lie in one allocation); plain
 * memory is cfxInvalidArgument. */
CFX_API cfxResult_t cfxMemAlloc(void** ptr, size_t size, cfxComm_t comm);
CFX_API cfxResult_t cfxMemFree(void* ptr, cfxComm_t comm);
CFX_API cfxResult_t cfxCommRegister(cfxComm_t comm, void* buff, size_t size, void** handle);
CFX_API cfxResult_t cfxCommDeregister(cfxComm_t comm, void* handle);

/* Collectives. */
CFX_API cfxResult_t cfxAllReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                 cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                              cfxRedOp_t op, int root, cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxBroadcast(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                 int root, cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, cfxDataType_t datatype,
                                 cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     cfxDataType_t datatype, cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxAlltoAll(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                cfxComm_t comm, cfxStream_t stream);

/* Variable-count collectives (MPI's v-forms; counts and displacements in elements, arrays of
 * one entry per rank, indexed by communicator rank). Every rank checks every rank's counts before
 * any data moves: counts that disagree between ranks (rank i's sendcounts[j] against rank j's
 * recvcounts[i]; AllGatherv's and ReduceScatterv's recvcounts on every rank) are cfxInvalidUsage
 * on every rank, naming both. Zero counts are allowed.
 * AlltoAllv: rank i sends sendcounts[j] elements from sendbuff + sdispls[j] to rank j, which
 *   receives them at recvbuff + rdispls[i]; sendbuff and recvbuff may not overlap.
 * AllGatherv: rank i's sendcount elements land at recvbuff + displs[i] on every rank; sendcount
 *   must equal recvcounts[rank]; in place: sendbuff == recvbuff + displs[rank].
 * ReduceScatterv: rank r receives recvcounts[r] elements, reduced from offset
 *   recvcounts[0] + ... + recvcounts[r-1] of every rank's sendbuff, in rank order (bitwise the
 *   same on every run); in place: recvbuff == sendbuff + that offset. */
CFX_API cfxResult_t cfxAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                 void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                 cfxDataType_t datatype, cfxComm_t comm, cfxStream_t stream);
CFX_API cfxResult_t cfxAllGatherv(const void* sendbuff, size_t sendcount, void* recvbuff, const size_t recvcounts[],
                                  const size_t displs[], cfxDataType_t datatype, cfxComm_t comm,
                                  cfxStream_t stream);
CFX_API cfxResult_t cfxReduceScatterv(const void* sendbuff, void* recvbuff, const size_t recvcounts[],
                                      cfxDataType_t datatype, cfxRedOp_t op, cfxComm_t comm, cfxStream_t stream);

/* Point to point. Sends and receives between one pair of ranks match in issue order. */
CFX_API cfxResult_t cfxSend(const void* sendbuff, size_t count, cfxDataType_t datatype, int peer, cfxComm_t comm,
                            cfxStream_t stream);
CFX_API cfxResult_t cfxRecv(void* recvbuff, size_t count, cfxDataType_t datatype, int peer, cfxComm_t comm,
                            cfxStream_t stream);

/* Group calls: operations issued between Start and End progress together (per calling thread). */
CFX_API cfxResult_t cfxGroupStart(void);
CFX_API cfxResult_t cfxGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* CONFLUX_CONFLUX_H_ */
