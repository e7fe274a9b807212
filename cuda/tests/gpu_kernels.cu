// Kernels for the GPU tests: a slow producer and a consumer, so that the tests can show stream
// order without any host synchronisation between them and the collective.
#include <cuda_runtime.h>

#include "gpu_kernels.h"

namespace {

__global__ void produce(float* out, size_t n, float value, long long spinNs) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long start = clock64();
    while (clock64() - start < spinNs) {
    }
  }
  __syncthreads();
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = value;
}

__global__ void consume(const float* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i];
}

}  // namespace

void launchProduce(float* out, size_t n, float value, long long spinCycles, cudaStream_t s) {
  produce<<<1, 256, 0, s>>>(out, n, value, spinCycles);
}

void launchConsume(const float* in, float* out, size_t n, cudaStream_t s) { consume<<<1, 256, 0, s>>>(in, out, n); }
