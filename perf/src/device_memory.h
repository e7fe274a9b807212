// GPU memory for the measurement loop: the runner builds each call's buffers on the host (the
// exact patterns of tools/verify), mirrors them on the GPU, times the collective on the device
// copies, and copies the result back to check it. nccl-tests' default; -M host keeps host buffers.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace cfxperf {

class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::string name() const = 0;  // e.g. "cuda:0 NVIDIA H100 80GB HBM3"
  virtual int device() const = 0;
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* device) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* device, size_t bytes) = 0;
};

// The GPU of this local rank (local rank modulo the devices; several ranks may share one), or
// nullptr with the reason in `why` where the build or the machine has no CUDA device.
std::unique_ptr<DeviceMemory> openCudaMemory(int localRank, std::string* why);

}  // namespace cfxperf
