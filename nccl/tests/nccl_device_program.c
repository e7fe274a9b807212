/* An NCCL program on device buffers, compiled against NCCL's own nccl.h and run on Conflux's shim:
 * N forked ranks share GPU 0 (Conflux's staging allows it); every collective runs on a CUDA stream
 * with no host synchronisation between the upload, the collectives and the download, and every
 * value is checked exactly; then grouped Send/Recv around a ring and a PreMulSum AllReduce, which
 * the shim runs on host copies. Mixed host/device buffers are an argument error. Exits 77 (CTest's
 * skip) when there is no CUDA device.
 *
 *   nccl_device_program N
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_presence.h"

#define MAXR 8
#define COUNT 100003 /* odd, and several staging chunks of float32 at small CFX_CUDA_CHUNK_BYTES */

static int failures = 0;

static void check(int rank, int ok, const char* what, ncclComm_t comm) {
  if (ok) return;
  fprintf(stderr, "rank %d: FAIL %s (%s)\n", rank, what, comm ? ncclGetLastError(comm) : "");
  ++failures;
}

/* A PreMulSum AllReduce (x * 0.5, summed) on device buffers, checked, with its first wrong element
 * printed; `when` says where in the program it ran. */
static void premulCheck(int rank, ncclComm_t comm, cudaStream_t s, const float* dsend, float* drecv, float ranks,
                        const char* when) {
  float half = 0.5f;
  ncclRedOp_t premul;
  check(rank, ncclRedOpCreatePreMulSum(&premul, &half, ncclFloat32, ncclScalarHostImmediate, comm) == ncclSuccess,
        "ncclRedOpCreatePreMulSum", comm);
  check(rank, ncclAllReduce(dsend, drecv, COUNT, ncclFloat32, premul, comm, s) == ncclSuccess,
        "PreMulSum ncclAllReduce", comm);
  float* halves = malloc(COUNT * sizeof(float));
  cudaMemcpyAsync(halves, drecv, COUNT * sizeof(float), cudaMemcpyDeviceToHost, s);
  check(rank, cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize", NULL);
  check(rank, ncclRedOpDestroy(premul, comm) == ncclSuccess, "ncclRedOpDestroy", comm);
  for (size_t i = 0; i < COUNT; ++i) {
    if (halves[i] != 0.5f * ranks * (float)(i % 97)) {
      fprintf(stderr, "rank %d: PreMulSum %s: element %zu: got %g, want %g (element 2: %g)\n", rank, when, i, halves[i],
              0.5f * ranks * (float)(i % 97), halves[2]);
      check(rank, 0, "PreMulSum value", comm);
      break;
    }
  }
  free(halves);
}

static int runRank(int rank, int n, ncclUniqueId id) {
  ncclComm_t comm = NULL;
  cudaSetDevice(0);
  check(rank, ncclCommInitRank(&comm, n, id, rank) == ncclSuccess, "ncclCommInitRank", NULL);
  if (!comm) return 1;
  cudaStream_t s;
  cudaStreamCreate(&s);
  const size_t bytes = (size_t)COUNT * n * sizeof(float);
  float *host = malloc(bytes), *dsend = NULL, *drecv = NULL;
  cudaMalloc((void**)&dsend, bytes);
  cudaMalloc((void**)&drecv, bytes);
  for (size_t i = 0; i < (size_t)COUNT * n; ++i) host[i] = (float)((rank + 1) * (i % 97));
  cudaMemcpyAsync(dsend, host, bytes, cudaMemcpyHostToDevice, s);
  /* AllReduce (sum), then Broadcast from the last rank, AllGather and ReduceScatter: all queued. */
  check(rank, ncclAllReduce(dsend, drecv, COUNT, ncclFloat32, ncclSum, comm, s) == ncclSuccess, "ncclAllReduce", comm);
  float* sum = malloc(COUNT * sizeof(float));
  cudaMemcpyAsync(sum, drecv, COUNT * sizeof(float), cudaMemcpyDeviceToHost, s);
  check(rank, ncclBroadcast(dsend, drecv, COUNT, ncclFloat32, n - 1, comm, s) == ncclSuccess, "ncclBroadcast", comm);
  float* bcast = malloc(COUNT * sizeof(float));
  cudaMemcpyAsync(bcast, drecv, COUNT * sizeof(float), cudaMemcpyDeviceToHost, s);
  check(rank, ncclAllGather(dsend, drecv, COUNT, ncclFloat32, comm, s) == ncclSuccess, "ncclAllGather", comm);
  float* gathered = malloc(bytes);
  cudaMemcpyAsync(gathered, drecv, bytes, cudaMemcpyDeviceToHost, s);
  check(rank, ncclReduceScatter(dsend, drecv, COUNT, ncclFloat32, ncclMax, comm, s) == ncclSuccess,
        "ncclReduceScatter", comm);
  float* scattered = malloc(COUNT * sizeof(float));
  cudaMemcpyAsync(scattered, drecv, COUNT * sizeof(float), cudaMemcpyDeviceToHost, s);
  check(rank, cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize", NULL);
  const float ranks = (float)(n * (n + 1) / 2);
  for (size_t i = 0; i < COUNT; ++i) {
    if (sum[i] != ranks * (float)(i % 97)) { check(rank, 0, "allreduce value", comm); break; }
    if (bcast[i] != (float)(n * (i % 97))) { check(rank, 0, "broadcast value", comm); break; }
    size_t j = (size_t)rank * COUNT + i;
    if (scattered[i] != (float)(n * (j % 97))) { check(rank, 0, "reducescatter value", comm); break; }
  }
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < COUNT; ++i)
      if (gathered[(size_t)r * COUNT + i] != (float)((r + 1) * (i % 97))) { check(rank, 0, "allgather value", comm); r = n; break; }
  /* What runs on host copies: Send/Recv around a ring inside a group (the way nccl-tests and
   * PyTorch build alltoall), and a PreMulSum AllReduce (x * 0.5, summed). */
  premulCheck(rank, comm, s, dsend, drecv, ranks, "before the group");
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  check(rank, ncclGroupStart() == ncclSuccess, "ncclGroupStart", comm);
  check(rank, ncclSend(dsend, COUNT, ncclFloat32, right, comm, s) == ncclSuccess, "grouped ncclSend", comm);
  check(rank, ncclRecv(drecv, COUNT, ncclFloat32, left, comm, s) == ncclSuccess, "grouped ncclRecv", comm);
  check(rank, ncclGroupEnd() == ncclSuccess, "ncclGroupEnd", comm);
  float* ring = malloc(COUNT * sizeof(float));
  cudaMemcpyAsync(ring, drecv, COUNT * sizeof(float), cudaMemcpyDeviceToHost, s);
  check(rank, cudaStreamSynchronize(s) == cudaSuccess, "cudaStreamSynchronize", NULL);
  for (size_t i = 0; i < COUNT; ++i)
    if (ring[i] != (float)((left + 1) * (i % 97))) { check(rank, 0, "grouped send/recv value", comm); break; }
  premulCheck(rank, comm, s, dsend, drecv, ranks, "after the group");
  /* Mixed buffers are refused, and the communicator goes on. */
  check(rank, ncclAllReduce(host, drecv, 1, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument, "mixed buffers", comm);
  ncclResult_t async = ncclSuccess;
  check(rank, ncclCommGetAsyncError(comm, &async) == ncclSuccess && async == ncclSuccess, "async error", comm);
  check(rank, ncclCommDestroy(comm) == ncclSuccess, "ncclCommDestroy", NULL);
  cudaFree(dsend);
  cudaFree(drecv);
  printf("rank %d of %d on device buffers: %s\n", rank, n, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  int n = argc == 2 ? atoi(argv[1]) : 0;
  if (n < 1 || n > MAXR) {
    fprintf(stderr, "usage: %s N (1..%d)\n", argv[0], MAXR);
    return 2;
  }
  /* CUDA is first touched in the ranks (a process that has initialised CUDA cannot fork ranks that
   * use it); rank 0 makes the id and hands it on through pipes. */
  int pipes[MAXR][2];
  for (int r = 1; r < n; ++r)
    if (pipe(pipes[r]) != 0) return 2;
  pid_t pids[MAXR];
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] != 0) continue;
    const int presence = cfxGpuPresence(); /* 77: no NVIDIA GPU here; 1: CUDA fails where there is one */
    if (presence != 0) _exit(presence);
    ncclUniqueId id;
    if (r == 0) {
      if (ncclGetUniqueId(&id) != ncclSuccess) _exit(3);
      for (int p = 1; p < n; ++p)
        if (write(pipes[p][1], &id, sizeof id) != (ssize_t)sizeof id) _exit(3);
    } else if (read(pipes[r][0], &id, sizeof id) != (ssize_t)sizeof id) {
      _exit(3);
    }
    _exit(runRank(r, n, id));
  }
  for (int p = 1; p < n; ++p) {
    close(pipes[p][0]);
    close(pipes[p][1]);
  }
  int bad = 0, skipped = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      ++skipped;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status 0x%x\n", r, status);
      bad = 1;
    }
  }
  if (skipped == n) {
    printf("skipped: no NVIDIA GPU on this machine\n");
    return 77;
  }
  return bad || skipped ? 1 : 0;
}
