// Device buffers on a CUDA GPU for the perf loop (CUDA builds).
#include <cuda_runtime_api.h>

#include <stdexcept>

#include "device_memory.h"

namespace cfxperf {

namespace {

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

class CudaMemory : public DeviceMemory {
 public:
  explicit CudaMemory(int device) : device_(device) {
    ok(cudaSetDevice(device), "cudaSetDevice");
    cudaDeviceProp p{};
    ok(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    name_ = "cuda:" + std::to_string(device) + " " + p.name;
  }
  std::string name() const override { return name_; }
  int device() const override { return device_; }
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    ok(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* d, const void* h, size_t bytes) override {
    ok(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  void download(void* h, const void* d, size_t bytes) override {
    ok(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
  }

 private:
  int device_;
  std::string name_;
};

}  // namespace

std::unique_ptr<DeviceMemory> openCudaMemory(int localRank, std::string* why) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    cudaGetLastError();
    if (why) *why = std::string("no CUDA device (") + cudaGetErrorString(e) + ")";
    return nullptr;
  }
  return std::make_unique<CudaMemory>(localRank % devices);
}

}  // namespace cfxperf
