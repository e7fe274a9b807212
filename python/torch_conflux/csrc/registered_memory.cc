#include "registered_memory.h"

#include <c10/util/Exception.h>

#include <string>

namespace torch_conflux {

namespace {

struct Block {
  void* ptr;
  cfxComm_t comm;
};

void freeBlock(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  // The communicator may be gone: then only the memory remains to free.
  if (cfxMemFree(b->ptr, b->comm) != cfxSuccess) cfxMemFree(b->ptr, nullptr);
  delete b;
}

class RegisteredAllocator final : public c10::Allocator {
 public:
  explicit RegisteredAllocator(cfxComm_t comm) : comm_(comm) {}

  c10::DataPtr allocate(size_t n) override {
    void* p = nullptr;
    cfxResult_t r = cfxMemAlloc(&p, n, comm_);
    TORCH_CHECK(r == cfxSuccess, "conflux: cfxMemAlloc of ", n, " bytes failed: ", cfxGetLastError(comm_));
    return {p, new Block{p, comm_}, &freeBlock, c10::Device(c10::DeviceType::CPU)};
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  cfxComm_t comm_;
};

}  // namespace

std::shared_ptr<c10::Allocator> registeredAllocator(cfxComm_t comm) { return std::make_shared<RegisteredAllocator>(comm); }

at::Tensor allocateRegistered(cfxComm_t comm, long size, const at::TensorOptions& options) {
  TORCH_CHECK(size >= 0, "conflux allocate_tensor: size must be >= 0, got ", size);
  TORCH_CHECK(!options.has_device() || options.device().is_cpu(),
              "conflux allocate_tensor: registered memory is host memory; got device ", options.device());
  const auto dtype = c10::typeMetaToScalarType(options.dtype());
  const size_t bytes = static_cast<size_t>(size) * c10::elementSize(dtype);
  RegisteredAllocator alloc(comm);
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, alloc.allocate(bytes), nullptr, false);
  return at::empty({0}, options.device(c10::kCPU)).set_(storage, 0, {size}, {1});
}

}  // namespace torch_conflux
