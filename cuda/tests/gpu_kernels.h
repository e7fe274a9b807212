// Host launchers of the GPU tests' kernels (gpu_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

// Spins `spinCycles` GPU clock cycles, then writes `value` to out[0, n): a late producer.
void launchProduce(float* out, size_t n, float value, long long spinCycles, cudaStream_t s);
// out[i] = in[i]: a consumer of the collective's result.
void launchConsume(const float* in, float* out, size_t n, cudaStream_t s);
