// Builds without CUDA: host buffers only.
#include "device_memory.h"

namespace cfxperf {

std::unique_ptr<DeviceMemory> openCudaMemory(int, std::string* why) {
  if (why) *why = "this build has no CUDA";
  return nullptr;
}

}  // namespace cfxperf
