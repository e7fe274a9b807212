#include <conflux/conflux.h>
#include <stdio.h>
int main(void) {
  int v = 0;
  if (cfxGetVersion(&v) != cfxSuccess) return 1;
  printf("conflux version %d\n", v);
  return v == CFX_VERSION_CODE ? 0 : 1;
}
