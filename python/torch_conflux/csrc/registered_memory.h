// Tensors in Conflux's registered memory (cfxMemAlloc): collectives whose tensors all live there,
// on every rank, run with no staging copy (comm/src/ops/zero_copy.h). This is what c10d's
// supportsTensorAlloc / allocateTensor / getMemAllocator offer, and what FSDP2's
// set_allocate_memory_from_process_group_for_comm(True) asks for its all-gather and reduce-scatter
// buffers. CPU tensors only: CUDA tensors take the staged GPU path.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

#include <memory>

#include "conflux/conflux.h"

namespace torch_conflux {

// An allocator of registered memory for `comm`, which keeps freed blocks for reuse (a caching
// pool, as torch's CUDA allocator). The memory returns to the kernel once the allocator and every
// tensor from it are gone, also after the communicator was destroyed.
std::shared_ptr<c10::Allocator> registeredAllocator(cfxComm_t comm);
// A 1-D CPU tensor of `size` elements of options' dtype from `allocator`.
at::Tensor allocateRegistered(c10::Allocator& allocator, long size, const at::TensorOptions& options);

}  // namespace torch_conflux
