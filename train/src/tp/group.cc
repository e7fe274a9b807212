#include <chrono>
#include <cstring>
#include <vector>

#include "conflux/train/tp.h"

namespace conflux::train::tp {

namespace {
using sbp::Layout;

int commSize(cfxComm_t c) {
  int n = 0;
  check(cfxCommCount(c, &n), "tp::Group: cfxCommCount", c);
  return n;
}
}  // namespace

struct Group::Impl {
  cfxComm_t comm;
  bool sp;
  sbp::Placement placement;
  Impl(cfxComm_t c, bool s) : comm(c), sp(s), placement(c, {commSize(c)}) {}
  mutable double seconds = 0;  // in box(), for Group::commSeconds
  // One boxing of a rows x cols fp32 activation.
  void box(const float* in, const Layout& from, float* out, const Layout& to, int rows, int cols) const {
    const auto t0 = std::chrono::steady_clock::now();
    sbp::boxing(placement, in, {from}, out, {to}, {rows, cols}, cfxFloat32);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // The layout outside the region: rows split with sequence parallelism, whole otherwise.
  Layout outside() const { return sp ? Layout::split(0) : Layout::broadcast(); }
};

Group::Group(cfxComm_t comm, bool sequenceParallel) : impl_(std::make_unique<Impl>(comm, sequenceParallel)) {}
Group::~Group() = default;

int Group::size() const { return impl_->placement.mesh()[0]; }
int Group::rank() const { return impl_->placement.coords()[0]; }
bool Group::sequenceParallel() const { return impl_->sp; }
cfxComm_t Group::comm() const { return impl_->comm; }

int Group::localRows(int rows) const {
  return impl_->sp ? static_cast<int>(sbp::splitRange(rows, size(), rank()).size()) : rows;
}
int Group::rowBegin(int rows) const {
  return impl_->sp ? static_cast<int>(sbp::splitRange(rows, size(), rank()).begin) : 0;
}

void Group::enterForward(const float* x, float* full, int rows, int cols) const {
  impl_->box(x, impl_->outside(), full, Layout::broadcast(), rows, cols);
}
void Group::enterBackward(const float* dfull, float* dx, int rows, int cols) const {
  impl_->box(dfull, Layout::partialSum(), dx, impl_->outside(), rows, cols);
}
void Group::exitForward(const float* partial, float* y, int rows, int cols) const {
  impl_->box(partial, Layout::partialSum(), y, impl_->outside(), rows, cols);
}
void Group::exitBackward(const float* dy, float* dfull, int rows, int cols) const {
  impl_->box(dy, impl_->outside(), dfull, Layout::broadcast(), rows, cols);
}

double Group::commSeconds() const { return impl_->seconds; }

void Group::addReplicatedGrad(float* g, const float* increment, size_t n) const {
  std::vector<float> whole(increment, increment + n);
  if (impl_->sp) impl_->box(increment, Layout::partialSum(), whole.data(), Layout::broadcast(), 1, static_cast<int>(n));
  for (size_t i = 0; i < n; ++i) g[i] += whole[i];
}

}  // namespace conflux::train::tp
