/*
 * Conflux on CUDA device buffers (libconflux_cuda): hfreduce's data path. Each GPU's buffers are
 * copied to pinned host staging in chunks, the CPUs run Conflux's collective on each chunk (shared
 * memory inside a host, the network between hosts), and the result is copied back, the three
 * stages pipelined. Only the GPU's copy engines work: no Conflux kernel runs on the GPU.
 *
 * Stream semantics are NCCL's: a call is ordered after the work already queued on `cudaStream`,
 * work queued on it afterwards sees the result, and the calling thread does not wait. Several
 * ranks may share one GPU.
 *
 * `cudaStream` is a cudaStream_t, passed as void* so that this header needs no CUDA headers.
 */
#ifndef CONFLUX_CONFLUX_CUDA_H_
#define CONFLUX_CONFLUX_CUDA_H_

#include "conflux/conflux.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cfxCudaComm* cfxCudaComm_t;

/* The staged path of `comm` for buffers on CUDA device `device`: staging memory, two copy streams
 * and a progress thread. `comm` must outlive it; once a communicator has a staged path, use it for
 * that communicator's operations (its progress thread issues them). */
CFX_API cfxResult_t cfxCudaCommCreate(cfxComm_t comm, int device, cfxCudaComm_t* cudaComm);
/* Waits for what was submitted, then frees the staging; the Conflux communicator stays. */
CFX_API cfxResult_t cfxCudaCommDestroy(cfxCudaComm_t cudaComm);
/* Waits until the host part of everything submitted has run (copies back to the device may still be
 * queued on their streams). Afterwards the calling thread may use the Conflux communicator directly
 * until its next staged call. */
CFX_API cfxResult_t cfxCudaCommSynchronize(cfxCudaComm_t cudaComm);
/* The first failure of an operation already returned from (a dead peer, a timeout): its streams were
 * released, their results are undefined, and every later call fails with it. */
CFX_API cfxResult_t cfxCudaCommGetAsyncError(cfxCudaComm_t cudaComm, cfxResult_t* asyncError);
CFX_API const char* cfxCudaGetLastError(cfxCudaComm_t cudaComm);

CFX_API cfxResult_t cfxCudaAllReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                     cfxRedOp_t op, cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaReduce(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                  cfxRedOp_t op, int root, cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaBroadcast(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                     int root, cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                     cfxDataType_t datatype, cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         cfxDataType_t datatype, cfxRedOp_t op, cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaAlltoAll(const void* sendbuff, void* recvbuff, size_t count, cfxDataType_t datatype,
                                    cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaSend(const void* sendbuff, size_t count, cfxDataType_t datatype, int peer,
                                cfxCudaComm_t comm, void* cudaStream);
CFX_API cfxResult_t cfxCudaRecv(void* recvbuff, size_t count, cfxDataType_t datatype, int peer, cfxCudaComm_t comm,
                                void* cudaStream);

#ifdef __cplusplus
}
#endif

#endif /* CONFLUX_CONFLUX_CUDA_H_ */
