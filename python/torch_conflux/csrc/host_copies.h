// Host copies of CUDA tensors, for the methods Conflux's staged path lacks (the backend runs the
// host method on the copies, then copiedBack copies the outputs back). A copy to the host runs
// after the work queued on the current stream, so it sees what that work wrote.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace torch_conflux {

struct HostCopies {
  std::vector<std::pair<at::Tensor, at::Tensor>> outputs;  // (CUDA tensor, its host copy)

  static std::vector<at::Tensor> in(const std::vector<at::Tensor>& list) {
    std::vector<at::Tensor> host;
    for (const auto& t : list) host.push_back(t.cpu());
    return host;
  }
  at::Tensor out(const at::Tensor& t) {
    at::Tensor host = t.cpu();
    outputs.emplace_back(t, host);
    return host;
  }
  std::vector<at::Tensor> out(const std::vector<at::Tensor>& list) {
    std::vector<at::Tensor> host;
    for (const auto& t : list) host.push_back(out(t));
    return host;
  }
};

}  // namespace torch_conflux
