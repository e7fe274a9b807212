// Placement (a communicator as a mesh) and boxing: each planned step is a 1-D conversion over
// one axis' communicator (sbp.h lists which collective each pair of layouts takes).
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <strings.h>
#include <unistd.h>
#include <vector>

#include "conflux/train/sbp.h"
#include "plan.h"
#include "tensor.h"

namespace conflux::train::sbp {

struct Placement::Impl {
  cfxComm_t comm = nullptr;
  std::vector<int> mesh, coords;
  std::vector<cfxComm_t> axisComms;
  int rank = 0;
  std::mutex logMu;
  std::set<std::string> logged;  // plans already logged at INFO

  ~Impl() {
    for (cfxComm_t c : axisComms) {
      if (c != nullptr) cfxCommDestroy(c);
    }
  }
};

Placement::Placement(cfxComm_t comm, std::vector<int> mesh) : impl_(std::make_unique<Impl>()) {
  impl_->comm = comm;
  int size = 0;
  check(cfxCommCount(comm, &size), "sbp::Placement: cfxCommCount", comm);
  check(cfxCommUserRank(comm, &impl_->rank), "sbp::Placement: cfxCommUserRank", comm);
  int64_t product = 1;
  for (int n : mesh) {
    if (n < 1) throw Error(cfxInvalidArgument, "sbp::Placement: a mesh axis has " + std::to_string(n) + " ranks");
    product *= n;
  }
  if (mesh.empty() || product != size) {
    throw Error(cfxInvalidArgument, "sbp::Placement: a mesh of " + std::to_string(product) + " ranks on a communicator of " +
                                        std::to_string(size));
  }
  impl_->mesh = std::move(mesh);
  const int axes = static_cast<int>(impl_->mesh.size());
  impl_->coords.assign(axes, 0);
  for (int k = axes - 1, r = impl_->rank; k >= 0; --k) {  // row-major: the last axis varies fastest
    impl_->coords[k] = r % impl_->mesh[k];
    r /= impl_->mesh[k];
  }
  // Axis k's communicator: the ranks that share every other coordinate, ordered by coordinate k.
  for (int k = 0; k < axes; ++k) {
    int color = 0;
    for (int j = 0; j < axes; ++j) color = color * impl_->mesh[j] + (j == k ? 0 : impl_->coords[j]);
    cfxComm_t sub = nullptr;
    check(cfxCommSplit(comm, color, impl_->coords[k], &sub, nullptr), "sbp::Placement: cfxCommSplit", comm);
    impl_->axisComms.push_back(sub);
  }
}

Placement::~Placement() = default;

int Placement::axes() const { return static_cast<int>(impl_->mesh.size()); }
const std::vector<int>& Placement::mesh() const { return impl_->mesh; }
const std::vector<int>& Placement::coords() const { return impl_->coords; }
cfxComm_t Placement::comm() const { return impl_->comm; }
cfxComm_t Placement::axisComm(int axis) const { return impl_->axisComms.at(axis); }

namespace {

cfxRedOp_t opOf(Layout::Kind k) {
  if (k == Layout::Kind::kPartialMax) return cfxMax;
  if (k == Layout::Kind::kPartialMin) return cfxMin;
  return cfxSum;
}

// Scratch of at least one byte, so no collective sees a null buffer.
std::vector<std::byte> scratch(int64_t elems, size_t esz) {
  return std::vector<std::byte>(std::max<size_t>(1, static_cast<size_t>(elems) * esz));
}

// Rows of dimension `dim` are contiguous blocks (nothing but 1s before it) and split evenly:
// collectives can work on the tensors as they are, with no packing.
bool contiguousEven(const Shape& s, int dim, int parts) {
  for (int d = 0; d < dim; ++d) {
    if (s[d] != 1) return false;
  }
  return s[dim] % parts == 0;
}

// A local B -> P' or a P -> P' after AllReduce: PartialSum keeps the tensor on coordinate 0 only.
void toPartial(const void* src, void* dst, int64_t elems, size_t esz, cfxDataType_t dtype, Layout::Kind kind, int coord) {
  if (kind == Layout::Kind::kPartialSum && coord != 0) {
    fillIdentity(dst, elems, dtype, kind);
  } else if (src != dst && elems > 0) {
    std::memcpy(dst, src, static_cast<size_t>(elems) * esz);
  }
}

// One step: the tensor `view` (what this axis sees) goes from layout a to b over `comm`.
void runStep(cfxComm_t comm, int n, int c, const Shape& view, const Layout& a, const Layout& b, StepKind kind,
             cfxDataType_t dtype, const void* src, void* dst) {
  const size_t esz = dtypeBytes(dtype);
  auto* out = static_cast<std::byte*>(dst);
  switch (kind) {
    case StepKind::kCopy: {
      const int64_t e = elements(applyLayout(view, a, n, c));
      if (e > 0) std::memcpy(dst, src, static_cast<size_t>(e) * esz);
      return;
    }
    case StepKind::kSlice: {
      const Range r = splitRange(view[b.dim], n, c);
      copyRows(src, view, dst, splitShape(view, b.dim, n, c), b.dim, r.begin, 0, r.size(), esz);
      return;
    }
    case StepKind::kToPartial: {
      if (!a.isSplit()) return toPartial(src, dst, elements(view), esz, dtype, b.kind, c);
      fillIdentity(dst, elements(view), dtype, b.kind);
      const Range r = splitRange(view[a.dim], n, c);
      copyRows(src, splitShape(view, a.dim, n, c), dst, view, a.dim, 0, r.begin, r.size(), esz);
      return;
    }
    case StepKind::kAllReduce: {
      const int64_t e = elements(view);
      if (e > 0) check(cfxAllReduce(src, dst, e, dtype, opOf(a.kind), comm, nullptr), "sbp boxing: cfxAllReduce", comm);
      if (b.isPartial()) toPartial(dst, dst, e, esz, dtype, b.kind, c);
      return;
    }
    case StepKind::kReduceScatter: {
      const int d = b.dim;
      const int64_t slot = elements(splitShape(view, d, n, 0));
      if (slot == 0) return;
      if (contiguousEven(view, d, n)) {
        check(cfxReduceScatter(src, dst, slot, dtype, opOf(a.kind), comm, nullptr), "sbp boxing: cfxReduceScatter", comm);
        return;
      }
      // Pack each rank's rows into a slot of the largest part's size (the padding is reduced too,
      // and dropped).
      std::vector<std::byte> packed = scratch(slot * n, esz);
      for (int i = 0; i < n; ++i) {
        const Range r = splitRange(view[d], n, i);
        copyRows(src, view, packed.data() + i * slot * esz, splitShape(view, d, n, i), d, r.begin, 0, r.size(), esz);
      }
      std::vector<std::byte> mine = scratch(slot, esz);
      check(cfxReduceScatter(packed.data(), mine.data(), slot, dtype, opOf(a.kind), comm, nullptr),
            "sbp boxing: cfxReduceScatter", comm);
      const int64_t e = elements(splitShape(view, d, n, c));
      if (e > 0) std::memcpy(dst, mine.data(), static_cast<size_t>(e) * esz);
      return;
    }
    case StepKind::kAllGather: {
      const int d = a.dim;
      const int64_t slot = elements(splitShape(view, d, n, 0));
      if (slot == 0) return;
      if (contiguousEven(view, d, n)) {
        check(cfxAllGather(src, dst, slot, dtype, comm, nullptr), "sbp boxing: cfxAllGather", comm);
        return;
      }
      std::vector<std::byte> send = scratch(slot, esz), all = scratch(slot * n, esz);
      const int64_t e = elements(splitShape(view, d, n, c));
      if (e > 0) std::memcpy(send.data(), src, static_cast<size_t>(e) * esz);
      check(cfxAllGather(send.data(), all.data(), slot, dtype, comm, nullptr), "sbp boxing: cfxAllGather", comm);
      for (int j = 0; j < n; ++j) {
        const Range r = splitRange(view[d], n, j);
        copyRows(all.data() + j * slot * esz, splitShape(view, d, n, j), out, view, d, 0, r.begin, r.size(), esz);
      }
      return;
    }
    case StepKind::kAlltoAll: {
      const int d = a.dim, e = b.dim;
      const int64_t slot = elements(splitShape(splitShape(view, d, n, 0), e, n, 0));
      if (slot == 0) return;
      const Shape mine = splitShape(view, d, n, c), result = splitShape(view, e, n, c);
      std::vector<std::byte> send = scratch(slot * n, esz), recv = scratch(slot * n, esz);
      for (int i = 0; i < n; ++i) {  // to rank i: my rows of its part of dimension e
        const Range r = splitRange(view[e], n, i);
        copyRows(src, mine, send.data() + i * slot * esz, splitShape(mine, e, n, i), e, r.begin, 0, r.size(), esz);
      }
      check(cfxAlltoAll(send.data(), recv.data(), slot, dtype, comm, nullptr), "sbp boxing: cfxAlltoAll", comm);
      for (int j = 0; j < n; ++j) {  // from rank j: its part of dimension d, of my part of e
        const Range r = splitRange(view[d], n, j);
        copyRows(recv.data() + j * slot * esz, splitShape(result, d, n, j), out, result, d, 0, r.begin, r.size(), esz);
      }
      return;
    }
  }
}

bool infoLogging() {
  const char* v = std::getenv("CFX_DEBUG");
  return v != nullptr && (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0);
}

}  // namespace

uint64_t boxingCost(const Signature& from, const Signature& to, const Shape& shape, cfxDataType_t dtype,
                    const std::vector<int>& mesh) {
  validate(from, shape, mesh, "source");
  validate(to, shape, mesh, "target");
  return planBoxing(from, to, shape, dtypeBytes(dtype), mesh).bytes;
}

std::string boxingPlan(const Signature& from, const Signature& to, const Shape& shape, cfxDataType_t dtype,
                       const std::vector<int>& mesh) {
  validate(from, shape, mesh, "source");
  validate(to, shape, mesh, "target");
  return planBoxing(from, to, shape, dtypeBytes(dtype), mesh).describe();
}

void boxing(const Placement& placement, const void* in, const Signature& from, void* out, const Signature& to,
            const Shape& shape, cfxDataType_t dtype) {
  const std::vector<int>& mesh = placement.mesh();
  const std::vector<int>& coords = placement.coords();
  validate(from, shape, mesh, "source");
  validate(to, shape, mesh, "target");
  const size_t esz = dtypeBytes(dtype);
  const Plan plan = planBoxing(from, to, shape, esz, mesh);
  if (infoLogging()) {
    std::string text = toString(from) + " -> " + toString(to) + " for a tensor of [";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    text += "] on a mesh of [";
    for (size_t i = 0; i < mesh.size(); ++i) text += (i ? ", " : "") + std::to_string(mesh[i]);
    text += "]: " + plan.describe() + "; " + std::to_string(plan.bytes) + " bytes per rank";
    // Each distinct conversion once per placement, so a training loop logs its plan once.
    Placement::Impl& impl = *placement.impl_;
    std::lock_guard<std::mutex> lock(impl.logMu);
    if (impl.logged.insert(text).second) {
      std::fprintf(stderr, "CFX INFO rank %d: sbp boxing %s\n", impl.rank, text.c_str());
    }
  }
  if (plan.steps.empty()) {
    const int64_t e = elements(localShape(shape, from, mesh, coords));
    if (e > 0 && in != out) std::memcpy(out, in, static_cast<size_t>(e) * esz);
    return;
  }
  std::vector<std::byte> bufs[2];
  const void* src = in;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& st = plan.steps[i];
    void* dst = out;
    if (i + 1 < plan.steps.size()) {
      Signature after = st.before;
      after[st.axis] = st.to;
      bufs[i % 2] = scratch(elements(localShape(shape, after, mesh, coords)), esz);
      dst = bufs[i % 2].data();
    }
    const Shape view = axisView(shape, st.before, st.axis, mesh, coords);
    runStep(placement.axisComm(st.axis), mesh[st.axis], coords[st.axis], view, st.from, st.to, st.kind, dtype, src, dst);
    src = dst;
  }
}

}  // namespace conflux::train::sbp
