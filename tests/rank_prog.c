/* A small C program launched by the launcher tests (and proof that the header is plain C).
 *   rank_prog allreduce       init from the environment, AllReduce, print "rank R/N ok"
 *   rank_prog fail R CODE     rank R exits with CODE at once; the others sleep 60 s
 *   rank_prog sleep           every rank sleeps 60 s (for signal forwarding)
 */
#include <conflux/conflux.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "allreduce";
  const char* rankEnv = getenv("CFX_RANK");
  int envRank = rankEnv ? atoi(rankEnv) : -1;
  if (strcmp(mode, "fail") == 0 && argc > 3) {
    if (envRank == atoi(argv[2])) return atoi(argv[3]);
    sleep(60);
    return 0;
  }
  if (strcmp(mode, "sleep") == 0) {
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    sleep(60);
    return 0;
  }
  cfxComm_t comm;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    fprintf(stderr, "init failed: %s\n", cfxGetLastError(NULL));
    return 1;
  }
  int rank = -1, n = -1;
  cfxCommUserRank(comm, &rank);
  cfxCommCount(comm, &n);
  double x = rank + 1, sum = 0;
  if (cfxAllReduce(&x, &sum, 1, cfxFloat64, cfxSum, comm, NULL) != cfxSuccess) {
    fprintf(stderr, "allreduce failed: %s\n", cfxGetLastError(comm));
    return 1;
  }
  int ok = sum == n * (n + 1) / 2.0;
  printf("rank %d/%d %s\n", rank, n, ok ? "ok" : "WRONG");
  cfxCommDestroy(comm);
  return ok ? 0 : 1;
}
