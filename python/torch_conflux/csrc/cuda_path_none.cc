// CudaPath in a build without libconflux_cuda: CUDA tensors are refused with a message that says so.
#include <c10/util/Exception.h>

#include "cuda_path.h"

namespace torch_conflux {

struct CudaPath::Staged {};

CudaPath::CudaPath(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {}
CudaPath::~CudaPath() = default;

bool CudaPath::built() { return false; }

void CudaPath::issue(const char* method, const CudaCall&, int, void*) {
  TORCH_CHECK(false, "conflux ", method, ": this build of torch_conflux has no CUDA path (Conflux was built "
              "without CUDA's toolkit, so there is no libconflux_cuda); CUDA tensors are not supported");
}

void CudaPath::synchronize(const char*) {}
void CudaPath::checkAsync(const char*) {}
void CudaPath::close() noexcept {}

}  // namespace torch_conflux
