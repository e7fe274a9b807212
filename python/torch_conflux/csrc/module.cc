// The extension module torch_conflux._C: the backend's creator for register_backend, whether the
// CUDA path is built, and the library's version.
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "backend.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "Conflux as a torch.distributed backend";
  m.def("create_backend", &torch_conflux::ConfluxBackend::create, pybind11::arg("store"), pybind11::arg("rank"),
        pybind11::arg("size"), pybind11::arg("timeout"), pybind11::call_guard<pybind11::gil_scoped_release>(),
        "Creates the Conflux backend of one process group (torch calls this).");
  m.def("has_cuda_path", &torch_conflux::CudaPath::built,
        "True when this build serves CUDA tensors through Conflux's staged path (libconflux_cuda).");
  m.def(
      "failed_ranks",
      [](const c10::intrusive_ptr<c10d::Backend>& backend) {
        auto* conflux = dynamic_cast<torch_conflux::ConfluxBackend*>(backend.get());
        TORCH_CHECK(conflux != nullptr, "failed_ranks: the group's backend is ", backend->getBackendName(),
                    ", not conflux");
        return conflux->failedRanks();
      },
      pybind11::arg("backend"), pybind11::call_guard<pybind11::gil_scoped_release>(),
      "The group ranks whose processes are gone (cfxCommGetFailedRanks).");
  m.def("version", [] {
    int v = 0;
    cfxGetVersion(&v);
    return v;
  });
}
