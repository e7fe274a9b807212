/* A first Conflux program: every rank contributes its rank number, AllReduce sums them, and each
 * rank checks the result and reports the time of a 64 MiB float AllReduce.
 *   cfxrun -n 4 -p ./allreduce_demo
 */
#include <conflux/conflux.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cfxResult_t r_ = (call);                                                               \
    if (r_ != cfxSuccess) {                                                                \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, cfxGetErrorString(r_), cfxGetLastError(NULL)); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int main(void) {
  cfxComm_t comm;
  CHECK(cfxCommInitFromEnv(&comm));
  int rank, nranks;
  CHECK(cfxCommUserRank(comm, &rank));
  CHECK(cfxCommCount(comm, &nranks));

  const size_t count = 16u << 20; /* 64 MiB of floats */
  float* buf = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) buf[i] = (float)rank;
  CHECK(cfxAllReduce(buf, buf, count, cfxFloat32, cfxSum, comm, NULL)); /* warm-up, in place */
  for (size_t i = 0; i < count; ++i) buf[i] = (float)rank;
  double t0 = now();
  CHECK(cfxAllReduce(buf, buf, count, cfxFloat32, cfxSum, comm, NULL));
  double secs = now() - t0;
  float want = nranks * (nranks - 1) / 2.0f;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += buf[i] != want;
  double busbw = 2.0 * (nranks - 1) / nranks * count * sizeof(float) / secs / 1e9;
  printf("rank %d of %d: AllReduce of 64 MiB took %.2f ms (busbw %.2f GB/s), %zu wrong values\n", rank, nranks,
         secs * 1e3, busbw, wrong);
  free(buf);
  CHECK(cfxCommDestroy(comm));
  return wrong == 0 ? 0 : 1;
}
