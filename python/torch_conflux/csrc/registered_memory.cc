#include "registered_memory.h"

#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace torch_conflux {

namespace {

// Freed blocks are kept by size and handed out again, as torch's CUDA caching allocator does: a
// fresh cfxMemAlloc costs a memory file, page faults on first touch, and on every peer a new
// mapping (FSDP2 allocates its buffers anew at every step: measured 1.20x slower steps uncached,
// perf/RESULTS-torch.md). Blocks return to the kernel when the pool goes: after the backend and
// the last tensor from it.
class Pool : public std::enable_shared_from_this<Pool> {
 public:
  explicit Pool(cfxComm_t comm) : comm_(comm) {}
  ~Pool() {
    for (auto& [bytes, blocks] : free_) {
      for (void* p : blocks) release(p);
    }
  }

  // A block of at least `bytes` (rounded up to whole pages) and its size class.
  void* get(size_t bytes, size_t& cls) {
    cls = (bytes + kPage - 1) / kPage * kPage;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(cls);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        return p;
      }
    }
    void* p = nullptr;
    cfxResult_t r = cfxMemAlloc(&p, cls, comm_);
    TORCH_CHECK(r == cfxSuccess, "conflux: cfxMemAlloc of ", cls, " bytes failed: ", cfxGetLastError(comm_));
    return p;
  }

  void put(void* p, size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[cls].push_back(p);
  }

 private:
  // The communicator may be gone: then only the memory remains to free.
  void release(void* p) {
    if (cfxMemFree(p, comm_) != cfxSuccess) cfxMemFree(p, nullptr);
  }

  static constexpr size_t kPage = 4096;
  cfxComm_t comm_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
};

struct Block {
  void* ptr;
  size_t cls;
  std::shared_ptr<Pool> pool;
};

void returnBlock(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  b->pool->put(b->ptr, b->cls);
  delete b;
}

class RegisteredAllocator final : public c10::Allocator {
 public:
  explicit RegisteredAllocator(std::shared_ptr<Pool> pool) : pool_(std::move(pool)) {}

  c10::DataPtr allocate(size_t n) override {
    size_t cls = 0;
    void* p = pool_->get(n, cls);
    return {p, new Block{p, cls, pool_}, &returnBlock, c10::Device(c10::DeviceType::CPU)};
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  std::shared_ptr<Pool> pool_;
};

}  // namespace

std::shared_ptr<c10::Allocator> registeredAllocator(cfxComm_t comm) {
  return std::make_shared<RegisteredAllocator>(std::make_shared<Pool>(comm));
}

at::Tensor allocateRegistered(c10::Allocator& allocator, long size, const at::TensorOptions& options) {
  TORCH_CHECK(size >= 0, "conflux allocate_tensor: size must be >= 0, got ", size);
  TORCH_CHECK(!options.has_device() || options.device().is_cpu(),
              "conflux allocate_tensor: registered memory is host memory; got device ", options.device());
  const auto dtype = c10::typeMetaToScalarType(options.dtype());
  const size_t bytes = static_cast<size_t>(size) * c10::elementSize(dtype);
  c10::Storage storage(c10::Storage::use_byte_size_t(), bytes, allocator.allocate(bytes), nullptr, false);
  return at::empty({0}, options.device(c10::kCPU)).set_(storage, 0, {size}, {1});
}

}  // namespace torch_conflux
