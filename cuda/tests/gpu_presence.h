/* Whether a GPU test may run, for C and C++ tests alike. A test is skipped (CTest's code 77) only
 * where this machine has no NVIDIA GPU at all; a device or driver that is there but fails is a
 * failure, never a skip. Prints what it found: the device's name and the driver's version, or why
 * it skips or fails. */
#ifndef CONFLUX_CUDA_TESTS_GPU_PRESENCE_H_
#define CONFLUX_CUDA_TESTS_GPU_PRESENCE_H_

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

/* No driver is installed: neither NVIDIA's device node nor its driver library is on this machine. */
static inline int cfxNoNvidiaDriver(void) {
  if (access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0) return 0;
  void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib != NULL) {
    dlclose(lib);
    return 0;
  }
  return 1;
}

/* 0: a device is usable; 77: no NVIDIA GPU here (skip); 1: CUDA fails on a machine that has one. */
static inline int cfxGpuPresence(void) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e == cudaSuccess && devices > 0) {
    struct cudaDeviceProp prop;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
      printf("FAIL: cudaGetDeviceProperties(0) failed on a machine with %d device(s)\n", devices);
      return 1;
    }
    printf("GPU 0 of %d: %s (compute capability %d.%d), driver %d, runtime %d\n", devices, prop.name, prop.major,
           prop.minor, driver, runtime);
    return 0;
  }
  if ((e == cudaSuccess && devices == 0) || e == cudaErrorNoDevice) {
    printf("skipped: no CUDA device (%s)\n", e == cudaSuccess ? "none found" : cudaGetErrorString(e));
    return 77;
  }
  if (cfxNoNvidiaDriver()) {
    printf("skipped: no NVIDIA driver or device on this machine (%s)\n", cudaGetErrorString(e));
    return 77;
  }
  printf("FAIL: this machine has NVIDIA's driver, but CUDA fails: %s\n", cudaGetErrorString(e));
  return 1;
}

#endif /* CONFLUX_CUDA_TESTS_GPU_PRESENCE_H_ */
