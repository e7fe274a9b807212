/* An ordinary NCCL program, compiled against NCCL's own nccl.h and linked by the name libnccl.so.2,
 * run on Conflux's shim with host buffers (no GPU needed). Every check compares exact bits.
 *
 *   nccl_program ranks N      N forked processes, one communicator each (ncclCommInitRank)
 *   nccl_program initall N    one process, N ranks from ncclCommInitAll, driven in groups
 *   nccl_program groupinit N  one process, N ncclCommInitRank calls inside one group
 */
#include <math.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXR 8
static int failures = 0;

static void fail(int rank, const char* what) {
  fprintf(stderr, "rank %d: FAIL %s\n", rank, what);
  ++failures;
}

static void ok(int rank, ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r != ncclSuccess) {
    char msg[600];
    snprintf(msg, sizeof msg, "%s returned %d (%s): %s", what, (int)r, ncclGetErrorString(r), ncclGetLastError(comm));
    fail(rank, msg);
  }
}

static size_t tsize(int t) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return s[t];
}

static double fp8value(int code, int mbits, int bias) {
  int e = (code & 0x7f) >> mbits, m = code & ((1 << mbits) - 1);
  return e == 0 ? ldexp((double)m / (1 << mbits), 1 - bias) : ldexp(1.0 + (double)m / (1 << mbits), e - bias);
}

/* Stores v (a small exact value, >= 0) as element i of type t; integers wrap as the type does. */
static void put(void* buf, int t, size_t i, double v) {
  char* p = (char*)buf + i * tsize(t);
  if (t <= ncclUint64) {
    uint64_t u = (uint64_t)(int64_t)v;
    memcpy(p, &u, tsize(t)); /* little endian: the low bytes */
  } else if (t == ncclFloat16) {
    _Float16 h = (_Float16)v;
    memcpy(p, &h, 2);
  } else if (t == ncclFloat32) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else if (t == ncclFloat64) {
    memcpy(p, &v, 8);
  } else if (t == ncclBfloat16) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t b = (uint16_t)(u >> 16);
    memcpy(p, &b, 2);
  } else {
    int mbits = t == ncclFloat8e4m3 ? 3 : 2, bias = t == ncclFloat8e4m3 ? 7 : 15;
    for (int c = 0; c < 0x7f; ++c) {
      if (fp8value(c, mbits, bias) == v) {
        *p = (char)c;
        return;
      }
    }
    fprintf(stderr, "no fp8 code for %g\n", v);
    abort();
  }
}

/* The job's size: Avg's inputs depend on it. */
static int worldSize = 1;

/* Avg's offset of rank r: +1 and -1 in pairs, 0 for the last rank of an odd count, so the offsets
 * cancel and the average is exact, yet Avg differs from Min (one less) and Max (one more). */
static double avgOffset(int r) { return r == worldSize - 1 && worldSize % 2 == 1 ? 0.0 : (r % 2 == 0 ? 1.0 : -1.0); }

/* The inputs: exact in every type, with sums, products, minima, maxima and averages that stay exact
 * for 8 ranks, and that differ from rank to rank for every op. */
static double input(int op, int r, size_t i) {
  switch (op) {
    case ncclSum: return (double)((r + i) % 2);
    case ncclProd: return 1.0 + (double)((r + i) % 2);
    case ncclAvg: return (double)(i % 3 + 1) + avgOffset(r);
    default: return (double)((r * 7 + i) % 5);
  }
}

static double expected(int op, int n, size_t i) {
  if (op == ncclAvg) return (double)(i % 3 + 1);
  double acc = input(op, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = input(op, r, i);
    acc = op == ncclSum ? acc + v : op == ncclProd ? acc * v : op == ncclMax ? fmax(acc, v) : fmin(acc, v);
  }
  return acc;
}

static void fill(void* buf, int t, size_t count, int op, int r) {
  for (size_t i = 0; i < count; ++i) put(buf, t, i, input(op, r, i));
}

static int same(const void* got, int t, size_t count, double (*want)(int, int, size_t), int a, int b) {
  char* w = malloc(count * tsize(t) + 1);
  for (size_t i = 0; i < count; ++i) put(w, t, i, want(a, b, i));
  int eq = count == 0 || memcmp(got, w, count * tsize(t)) == 0;
  free(w);
  return eq;
}

static const size_t counts[] = {0, 1, 7, 1031};

/* Every datatype x op x count, in place and out of place. */
static void allreduces(int rank, int n, ncclComm_t comm) {
  for (int t = 0; t < ncclNumTypes; ++t)
    for (int op = 0; op < 5; ++op)
      for (int c = 0; c < 4; ++c)
        for (int inplace = 0; inplace < 2; ++inplace) {
          size_t count = counts[c], bytes = count * tsize(t) + 1;
          char *send = malloc(bytes), *recv = inplace ? send : malloc(bytes);
          fill(send, t, count, op, rank);
          char what[96];
          snprintf(what, sizeof what, "ncclAllReduce type %d op %d count %zu%s", t, op, count, inplace ? " in place" : "");
          ok(rank, ncclAllReduce(send, recv, count, t, op, comm, 0), what, comm);
          if (!same(recv, t, count, expected, op, n)) fail(rank, what);
          if (!inplace) free(recv);
          free(send);
        }
}

static double byRank(int r, int unused, size_t i) { (void)unused; return (double)((r * 3 + i) % 7); }
static double reduceScatterWant(int rank, int n, size_t i) { return expected(ncclSum, n, rank * 1031 + i); }

/* Data movement and the rooted collectives, in three datatypes. */
static void movement(int rank, int n, ncclComm_t comm) {
  const int types[] = {ncclInt8, ncclBfloat16, ncclFloat32};
  const size_t count = 1031;
  for (int k = 0; k < 3; ++k) {
    int t = types[k];
    size_t es = tsize(t), bytes = count * es;
    char* mine = malloc(bytes);
    char* all = malloc(bytes * n);
    char* out = malloc(bytes * (n < 2 ? 2 : n)); /* two blocks at least: the ring exchange */
    for (size_t i = 0; i < count; ++i) put(mine, t, i, byRank(rank, 0, i));
    /* Broadcast from the last rank, and the in-place ncclBcast from rank 0 */
    memcpy(out, mine, bytes);
    ok(rank, ncclBroadcast(mine, out, count, t, n - 1, comm, 0), "ncclBroadcast", comm);
    if (!same(out, t, count, byRank, n - 1, 0)) fail(rank, "ncclBroadcast value");
    memcpy(out, mine, bytes);
    ok(rank, ncclBcast(out, count, t, 0, comm, 0), "ncclBcast", comm);
    if (!same(out, t, count, byRank, 0, 0)) fail(rank, "ncclBcast value");
    /* Reduce (sum) to the last rank */
    fill(mine, t, count, ncclSum, rank);
    ok(rank, ncclReduce(mine, out, count, t, ncclSum, n - 1, comm, 0), "ncclReduce", comm);
    if (rank == n - 1 && !same(out, t, count, expected, ncclSum, n)) fail(rank, "ncclReduce value");
    /* ReduceScatter: block r of the sum lands on rank r */
    for (size_t i = 0; i < count * n; ++i) put(all, t, i, input(ncclSum, rank, i));
    ok(rank, ncclReduceScatter(all, out, count, t, ncclSum, comm, 0), "ncclReduceScatter", comm);
    if (!same(out, t, count, reduceScatterWant, rank, n)) fail(rank, "ncclReduceScatter value");
    /* AllGather, Gather to rank 0 */
    for (size_t i = 0; i < count; ++i) put(mine, t, i, byRank(rank, 0, i));
    ok(rank, ncclAllGather(mine, out, count, t, comm, 0), "ncclAllGather", comm);
    for (int r = 0; r < n; ++r)
      if (!same(out + r * bytes, t, count, byRank, r, 0)) fail(rank, "ncclAllGather value");
    memset(out, 0, bytes * n);
    ok(rank, ncclGather(mine, out, count, t, 0, comm, 0), "ncclGather", comm);
    for (int r = 0; rank == 0 && r < n; ++r)
      if (!same(out + r * bytes, t, count, byRank, r, 0)) fail(rank, "ncclGather value");
    /* Scatter from the last rank: block r holds byRank(r) */
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) put(all + r * bytes, t, i, byRank(r, 0, i));
    ok(rank, ncclScatter(all, out, count, t, n - 1, comm, 0), "ncclScatter", comm);
    if (!same(out, t, count, byRank, rank, 0)) fail(rank, "ncclScatter value");
    /* AlltoAll: block p of rank r holds byRank(r * n + p); rank p receives it as block r */
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < count; ++i) put(all + p * bytes, t, i, byRank(rank * n + p, 0, i));
    ok(rank, ncclAlltoAll(all, out, count, t, comm, 0), "ncclAlltoAll", comm);
    for (int r = 0; r < n; ++r)
      if (!same(out + r * bytes, t, count, byRank, r * n + rank, 0)) fail(rank, "ncclAlltoAll value");
    /* Send/Recv both ways around the ring, in one group */
    int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    ok(rank, ncclGroupStart(), "ncclGroupStart", comm);
    ok(rank, ncclSend(mine, count, t, next, comm, 0), "ncclSend", comm);
    ok(rank, ncclSend(mine, count, t, prev, comm, 0), "ncclSend", comm);
    ok(rank, ncclRecv(out, count, t, prev, comm, 0), "ncclRecv", comm);
    ok(rank, ncclRecv(out + bytes, count, t, next, comm, 0), "ncclRecv", comm);
    ok(rank, ncclGroupEnd(), "ncclGroupEnd", comm);
    if (!same(out, t, count, byRank, prev, 0) || !same(out + bytes, t, count, byRank, next, 0)) fail(rank, "send/recv value");
    free(mine);
    free(all);
    free(out);
  }
}

static double scaledSum(int scalar, int n, size_t i) { return scalar * expected(ncclSum, n, i); }

/* PreMulSum: a host-immediate float scalar, a device-resident int scalar read at each call, bf16. */
static void premul(int rank, int n, ncclComm_t comm) {
  const size_t count = 1031;
  char *in = malloc(count * 8), *out = malloc(count * 8);
  ncclRedOp_t op;
  float f = 3.0f;
  ok(rank, ncclRedOpCreatePreMulSum(&op, &f, ncclFloat32, ncclScalarHostImmediate, comm), "PreMulSum create", comm);
  f = 100.0f; /* read at creation: this has no effect */
  fill(in, ncclFloat32, count, ncclSum, rank);
  ok(rank, ncclAllReduce(in, out, count, ncclFloat32, op, comm, 0), "ncclAllReduce premul f32", comm);
  if (!same(out, ncclFloat32, count, scaledSum, 3, n)) fail(rank, "premul f32 value");
  ok(rank, ncclAllReduce(in, in, count, ncclFloat32, op, comm, 0), "ncclAllReduce premul f32 in place", comm);
  if (!same(in, ncclFloat32, count, scaledSum, 3, n)) fail(rank, "premul f32 in place value");
  if (ncclAllReduce(in, out, count, ncclInt32, op, comm, 0) != ncclInvalidArgument) fail(rank, "premul op on another datatype");
  ok(rank, ncclRedOpDestroy(op, comm), "ncclRedOpDestroy", comm);
  if (ncclAllReduce(in, out, count, ncclFloat32, op, comm, 0) != ncclInvalidArgument) fail(rank, "destroyed op accepted");
  int32_t k = 2;
  ok(rank, ncclRedOpCreatePreMulSum(&op, &k, ncclInt32, ncclScalarDevice, comm), "PreMulSum create int", comm);
  fill(in, ncclInt32, count, ncclSum, rank);
  ok(rank, ncclReduceScatter(in, out, 1, ncclInt32, op, comm, 0), "ncclReduceScatter premul", comm);
  int32_t scattered = 0;
  memcpy(&scattered, out, 4);
  if (scattered != (int32_t)(2 * expected(ncclSum, n, (size_t)rank))) fail(rank, "premul reduce-scatter value");
  k = 5; /* read at each call */
  ok(rank, ncclAllReduce(in, out, count, ncclInt32, op, comm, 0), "ncclAllReduce premul int", comm);
  if (!same(out, ncclInt32, count, scaledSum, 5, n)) fail(rank, "premul int value");
  ok(rank, ncclRedOpDestroy(op, comm), "ncclRedOpDestroy", comm);
  uint16_t two = 0x4000; /* bf16 2.0 */
  ok(rank, ncclRedOpCreatePreMulSum(&op, &two, ncclBfloat16, ncclScalarHostImmediate, comm), "PreMulSum bf16", comm);
  fill(in, ncclBfloat16, count, ncclSum, rank);
  ok(rank, ncclAllReduce(in, out, count, ncclBfloat16, op, comm, 0), "ncclAllReduce premul bf16", comm);
  if (!same(out, ncclBfloat16, count, scaledSum, 2, n)) fail(rank, "premul bf16 value");
  ok(rank, ncclRedOpDestroy(op, comm), "ncclRedOpDestroy", comm);
  free(in);
  free(out);
}

static int mappedShareables(void) {
  FILE* f = fopen("/proc/self/maps", "r");
  char line[512];
  int k = 0;
  while (f && fgets(line, sizeof line, f)) k += strstr(line, "memfd:cfx-shareable") != NULL;
  if (f) fclose(f);
  return k;
}

/* ncclMemAlloc + ncclCommRegister: host memory the peers map; a large AllReduce on it runs with no
 * staging copy (the peers' buffers appear in /proc/self/maps) and gives the exact sums. Plain memory
 * registers as a hint. */
static void registered(int rank, int n, ncclComm_t comm) {
  const size_t count = (1 << 20) + 3; /* 4 MiB of fp32: above CFX_REGISTERED_MIN_BYTES */
  void *in = NULL, *out = NULL, *hin = NULL, *hout = NULL;
  ok(rank, ncclMemAlloc(&in, count * 4), "ncclMemAlloc", comm);
  ok(rank, ncclMemAlloc(&out, count * 4), "ncclMemAlloc", comm);
  ok(rank, ncclCommRegister(comm, in, count * 4, &hin), "ncclCommRegister", comm);
  ok(rank, ncclCommRegister(comm, out, count * 4, &hout), "ncclCommRegister", comm);
  const int before = mappedShareables();
  fill(in, ncclFloat32, count, ncclSum, rank);
  ok(rank, ncclAllReduce(in, out, count, ncclFloat32, ncclSum, comm, 0), "ncclAllReduce registered", comm);
  if (!same(out, ncclFloat32, count, expected, ncclSum, n)) fail(rank, "registered allreduce value");
  ok(rank, ncclAllReduce(in, in, count, ncclFloat32, ncclSum, comm, 0), "ncclAllReduce registered in place", comm);
  if (!same(in, ncclFloat32, count, expected, ncclSum, n)) fail(rank, "registered in-place allreduce value");
  if (n > 1 && mappedShareables() <= before) fail(rank, "registered buffers were staged (no peer buffer mapped)");
  ok(rank, ncclCommDeregister(comm, hin), "ncclCommDeregister", comm);
  ok(rank, ncclCommDeregister(comm, hout), "ncclCommDeregister", comm);
  ok(rank, ncclMemFree(in), "ncclMemFree", comm);
  ok(rank, ncclMemFree(out), "ncclMemFree", comm);
  char plain[64];
  void* h = NULL;
  ok(rank, ncclCommRegister(comm, plain, sizeof plain, &h), "ncclCommRegister plain memory", comm);
  ok(rank, ncclCommDeregister(comm, h), "ncclCommDeregister plain memory", comm);
}

/* Bad input: NCCL's codes, a message naming the argument, and the communicator still works. */
static void errors(int rank, ncclComm_t comm) {
  float x[4] = {1, 1, 1, 1};
  if (ncclAllReduce(x, x, 4, 99, ncclSum, comm, 0) != ncclInvalidArgument) fail(rank, "datatype 99 accepted");
  if (!strstr(ncclGetLastError(comm), "datatype")) fail(rank, "datatype error text");
  if (ncclAllReduce(x, x, 4, ncclFloat32, 77, comm, 0) != ncclInvalidArgument) fail(rank, "op 77 accepted");
  if (!strstr(ncclGetLastError(comm), "op 77")) fail(rank, "op error text");
  if (ncclBroadcast(x, x, 4, ncclFloat32, 1000, comm, 0) != ncclInvalidArgument) fail(rank, "root 1000 accepted");
  void* win = NULL;
  if (ncclCommWindowRegister(comm, x, sizeof x, (ncclWindow_t*)&win, 0) != ncclInvalidUsage) fail(rank, "window accepted");
  if (!strstr(ncclGetLastError(comm), "not supported")) fail(rank, "unsupported text");
  ncclResult_t async = ncclInternalError;
  ok(rank, ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError", comm);
  if (async != ncclSuccess) fail(rank, "async error after bad input");
}

/* Suspension: Conflux holds no GPU memory, so every statistic is 0; a suspended communicator refuses
 * operations until it is resumed, then works as before. */
static void suspension(int rank, int n, ncclComm_t comm) {
  uint64_t v = 99;
  ok(rank, ncclCommMemStats(comm, ncclStatGpuMemTotal, &v), "ncclCommMemStats total", comm);
  if (v != 0) fail(rank, "GPU memory total not 0");
  ok(rank, ncclCommSuspend(comm, NCCL_SUSPEND_MEM), "ncclCommSuspend", comm);
  ok(rank, ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v), "ncclCommMemStats suspended", comm);
  if (v != 1) fail(rank, "not reported suspended");
  int32_t one = 1, sum = 0;
  if (ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, comm, 0) != ncclInvalidUsage) fail(rank, "suspended comm ran a call");
  if (!strstr(ncclGetLastError(comm), "suspended")) fail(rank, "suspended error text");
  if (ncclCommSuspend(comm, NCCL_SUSPEND_MEM) != ncclInvalidUsage) fail(rank, "suspended twice");
  ok(rank, ncclCommResume(comm), "ncclCommResume", comm);
  if (ncclCommResume(comm) != ncclInvalidUsage) fail(rank, "resumed twice");
  ok(rank, ncclCommMemStats(comm, ncclStatGpuMemSuspended, &v), "ncclCommMemStats resumed", comm);
  if (v != 0) fail(rank, "still reported suspended");
  if (ncclCommMemStats(comm, (ncclCommMemStat_t)42, &v) != ncclInvalidArgument) fail(rank, "statistic 42 accepted");
  ok(rank, ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, comm, 0), "ncclAllReduce after resume", comm);
  if (sum != n) fail(rank, "allreduce after resume value");
}

static void checkQueries(int rank, int n, ncclComm_t comm) {
  int count = -1, me = -1, dev = -1;
  ok(rank, ncclCommCount(comm, &count), "ncclCommCount", comm);
  ok(rank, ncclCommUserRank(comm, &me), "ncclCommUserRank", comm);
  ok(rank, ncclCommCuDevice(comm, &dev), "ncclCommCuDevice", comm);
  if (count != n || me != rank || dev < 0) fail(rank, "queries");
}

static int runRank(int rank, int n, ncclUniqueId id) {
  worldSize = n;
  int version = 0;
  ncclGetVersion(&version);
  if (version != NCCL_VERSION(2, 27, 7)) fail(rank, "ncclGetVersion");
  ncclComm_t comm = NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ok(rank, ncclCommInitRankConfig(&comm, n, id, rank, &config), "ncclCommInitRankConfig", NULL);
  if (!comm) return 1;
  checkQueries(rank, n, comm);
  allreduces(rank, n, comm);
  movement(rank, n, comm);
  premul(rank, n, comm);
  registered(rank, n, comm);
  errors(rank, comm);
  suspension(rank, n, comm);
  /* Split by parity: each half sums ones */
  ncclComm_t half = NULL;
  ok(rank, ncclCommSplit(comm, rank % 2, rank, &half, NULL), "ncclCommSplit", comm);
  int32_t one = 1, members = 0;
  ok(rank, ncclAllReduce(&one, &members, 1, ncclInt32, ncclSum, half, 0), "ncclAllReduce on split", half);
  if (members != (n + 1 - rank % 2) / 2) fail(rank, "split size");
  ok(rank, ncclCommDestroy(half), "ncclCommDestroy half", NULL);
  /* Cancellation (1e30, 1, -1e30, then zeros): the exact sum, 1, under CFX_REDUCE_EXACT=1 (Conflux's
   * exact reductions); 0 in rank order otherwise. */
  if (n >= 3) {
    float v = rank == 0 ? 1e30f : rank == 1 ? 1.0f : rank == 2 ? -1e30f : 0.0f, s = -1.0f;
    ok(rank, ncclAllReduce(&v, &s, 1, ncclFloat32, ncclSum, comm, 0), "ncclAllReduce cancellation", comm);
    const char* exact = getenv("CFX_REDUCE_EXACT");
    if (s != (exact && strcmp(exact, "1") == 0 ? 1.0f : 0.0f)) fail(rank, "cancellation sum (CFX_REDUCE_EXACT)");
  }
  /* A healthy shrink without rank 0 (which does not call it): the others sum ones on it. */
  int zero = 0;
  ncclComm_t shrunk = NULL;
  if (ncclCommShrink(comm, &zero, 1, &shrunk, NULL, 7) != ncclInvalidArgument || shrunk != NULL) fail(rank, "shrink flags 7");
  if (rank != 0 && n > 1) {
    ok(rank, ncclCommShrink(comm, &zero, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT), "ncclCommShrink", comm);
    int me = -1;
    ok(rank, ncclCommUserRank(shrunk, &me), "ncclCommUserRank of shrunk", shrunk);
    ok(rank, ncclAllReduce(&one, &members, 1, ncclInt32, ncclSum, shrunk, 0), "ncclAllReduce on shrunk", shrunk);
    if (members != n - 1 || me != rank - 1) fail(rank, "shrunk size or rank");
    ok(rank, ncclCommDestroy(shrunk), "ncclCommDestroy shrunk", NULL);
  }
  ok(rank, ncclCommFinalize(comm), "ncclCommFinalize", comm);
  ok(rank, ncclCommDestroy(comm), "ncclCommDestroy", NULL);
  if (ncclAllReduce(&one, &members, 1, ncclInt32, ncclSum, comm, 0) != ncclInvalidArgument) fail(rank, "destroyed comm accepted");
  printf("rank %d of %d: %s\n", rank, n, failures ? "FAILED" : "ok");
  fflush(stdout);
  return failures ? 1 : 0;
}

/* One process holding every rank: collectives go in a group over all communicators. */
static int runTogether(int n, ncclComm_t* comms) {
  float in[MAXR][64], out[MAXR][64];
  for (int r = 0; r < n; ++r) {
    checkQueries(r, n, comms[r]);
    for (int i = 0; i < 64; ++i) in[r][i] = (float)(r + i);
  }
  ok(0, ncclGroupStart(), "ncclGroupStart", NULL);
  for (int r = 0; r < n; ++r) ok(r, ncclAllReduce(in[r], out[r], 64, ncclFloat32, ncclSum, comms[r], 0), "ncclAllReduce", comms[r]);
  ok(0, ncclGroupEnd(), "ncclGroupEnd", NULL);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < 64; ++i)
      if (out[r][i] != (float)(n * i + n * (n - 1) / 2)) { fail(r, "grouped allreduce value"); break; }
  for (int r = 0; r < n; ++r) ok(r, ncclCommDestroy(comms[r]), "ncclCommDestroy", NULL);
  printf("%d ranks in one process: %s\n", n, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc != 3 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAXR) {
    fprintf(stderr, "usage: %s ranks|initall|groupinit N (1..%d)\n", argv[0], MAXR);
    return 2;
  }
  int n = atoi(argv[2]);
  ncclComm_t comms[MAXR];
  if (strcmp(argv[1], "initall") == 0) {
    ok(0, ncclCommInitAll(comms, n, NULL), "ncclCommInitAll", NULL);
    return failures ? 1 : runTogether(n, comms);
  }
  if (strcmp(argv[1], "groupinit") == 0) {
    ncclUniqueId id;
    ok(0, ncclGetUniqueId(&id), "ncclGetUniqueId", NULL);
    ok(0, ncclGroupStart(), "ncclGroupStart", NULL);
    for (int r = 0; r < n; ++r) ok(r, ncclCommInitRank(&comms[r], n, id, r), "ncclCommInitRank", NULL);
    ok(0, ncclGroupEnd(), "ncclGroupEnd", NULL);
    return failures ? 1 : runTogether(n, comms);
  }
  /* Fork first (no thread exists yet), then rank 0 makes the id and hands it to the others through
   * pipes, as a launcher would: forking after ncclGetUniqueId would copy its threads' locks. */
  int pipes[MAXR][2];
  for (int r = 1; r < n; ++r)
    if (pipe(pipes[r]) != 0) return 2;
  pid_t pids[MAXR];
  for (int r = 0; r < n; ++r) {
    pids[r] = fork();
    if (pids[r] != 0) continue;
    ncclUniqueId id;
    for (int p = 1; p < n && r != 0; ++p) close(pipes[p][1]); /* so rank 0's death is EOF here */
    if (r == 0) {
      ok(0, ncclGetUniqueId(&id), "ncclGetUniqueId", NULL);
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
  int bad = 0;
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status 0x%x\n", r, status);
      bad = 1;
    }
  }
  return bad;
}
