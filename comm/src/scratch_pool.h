// Host buffers a communicator keeps between calls for the temporaries of one call (the padded path
// of the v-collectives, vector_coll.h): a fresh buffer's first touch costs page faults that, on this
// kind of VM, took longer than the network time the padded path saves (vcoll_padding probe, 4 MiB
// blocks across 2 Gbit/s links: 99 ms fresh against 63 ms reused, rank to rank 73 ms). A buffer
// comes back to the pool when its last user lets it go; the pool keeps at most kKept of them, each
// of at most kMaxKeptBytes, and reuses one that is large enough (contents left as they were).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace conflux {

class ScratchPool : public std::enable_shared_from_this<ScratchPool> {
 public:
  static constexpr size_t kKept = 2;
  static constexpr size_t kMaxKeptBytes = size_t{256} << 20;
  using Buffer = std::vector<std::byte>;

  // At least `bytes` (its size() is exactly `bytes`); returned to the pool when released.
  std::shared_ptr<Buffer> take(size_t bytes) {
    std::unique_ptr<Buffer> b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->capacity() >= bytes) {
          b = std::move(*it);
          free_.erase(it);
          break;
        }
      }
    }
    if (!b) b = std::make_unique<Buffer>();
    b->resize(bytes);
    return std::shared_ptr<Buffer>(b.release(), [pool = shared_from_this()](Buffer* p) { pool->give(p); });
  }

 private:
  void give(Buffer* p) {
    std::unique_ptr<Buffer> b(p);
    if (b->capacity() > kMaxKeptBytes) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(b));
    if (free_.size() > kKept) free_.erase(free_.begin());  // the oldest goes
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> free_;
};

}  // namespace conflux
