// NCCL's C ABI as the shim implements it: the types, enum values and struct prefixes an NCCL
// program compiled against NCCL's own nccl.h passes in. Written from NCCL's documented API; only
// what the shim reads is declared (ncclConfig_t's leading fields, which every NCCL version keeps).
// cudaStream_t is an opaque pointer here, so the shim builds without CUDA's headers.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

// The NCCL version whose API the shim implements (NCCL_VERSION(2, 27, 7)): from 2.28 on, programs
// such as nccl-tests compile NCCL's device API, which the shim cannot serve.
#define CFX_NCCL_MAJOR 2
#define CFX_NCCL_MINOR 27
#define CFX_NCCL_PATCH 7
#define CFX_NCCL_VERSION_CODE (CFX_NCCL_MAJOR * 10000 + CFX_NCCL_MINOR * 100 + CFX_NCCL_PATCH)

extern "C" {

typedef struct ncclComm* ncclComm_t;
#ifndef __CUDA_RUNTIME_API_H__  // CUDA's own (a pointer too) where its headers came first
typedef void* cudaStream_t;
#endif
typedef void* ncclWindow_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

// Built-in ops are 0..4; ops made by ncclRedOpCreatePreMulSum are ncclNumOps and up.
typedef int ncclRedOp_t;
constexpr int ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5;

// The same values as cfxDataType_t (ncclInt8 = 0 ... ncclFloat8e5m2 = 11).
typedef int ncclDataType_t;
constexpr int ncclNumTypes = 12;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

// The leading fields of every ncclConfig_t version; `size` says how much of it the caller has.
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
} ncclConfigPrefix;

// ncclCommSuspend's flags and ncclCommMemStats's statistics (NCCL 2.29.7 and later).
#define NCCL_SUSPEND_MEM 0x01
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01
constexpr int ncclStatGpuMemSuspend = 0, ncclStatGpuMemSuspended = 1, ncclStatGpuMemPersist = 2,
              ncclStatGpuMemTotal = 3;

#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_API_MAGIC 0xcafebeef

}  // extern "C"
