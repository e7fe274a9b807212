// SBP layouts and boxing (OneFlow's view of parallelism), over Conflux collectives.
//
// A Placement is a communicator viewed as an N-D mesh of ranks (row-major: the last axis varies
// fastest), each axis a sub-communicator made once with cfxCommSplit. A tensor on a placement has
// one Layout per mesh axis, its signature:
//   Split(d)    the axis's ranks hold consecutive parts of dimension d;
//   Broadcast   every rank of the axis holds the whole;
//   PartialSum  the whole is the element-wise sum of the ranks' tensors (PartialMax, PartialMin:
//               their maximum, their minimum).
// The axes apply in order: axis 0 distributes the logical tensor, axis 1 distributes each part
// axis 0 made, and so on (OneFlow's nd-sbp).
//
// Uneven splits: a dimension of length L split n ways gives part i the rows
// [i*q + min(i, r), ...) with q = L / n and r = L % n: the first r parts get one row more
// (numpy.array_split and torch.tensor_split; not torch.chunk, which makes parts of ceil(L / n)
// and may leave the last ranks fewer or none).
//
// boxing() converts a tensor from one signature to another on the same placement with the
// cheapest collectives, one mesh axis at a time:
//   P -> B  AllReduce            P -> S(d)  ReduceScatter      S(d) -> B  AllGather
//   S(d) -> S(e)  AlltoAll       B -> S(d)  a local slice      S(d) -> S(d), B -> B, P -> P: a copy
//   B -> P      rank 0 of the axis keeps the tensor and the others hold zeros (PartialSum); every
//               rank keeps it (PartialMax, PartialMin: the maximum of equal tensors is the tensor)
//   S(d) -> P   each rank's part in place, the rest zeros (PartialSum) or the op's identity
//               (PartialMax: the type's lowest value, -inf for floating types; PartialMin: the
//               highest)
//   P -> P'     of another kind: by the cheapest path, which on one axis is ReduceScatter to a split,
//               then S(d) -> P' locally: each rank holds its reduced part and the identity of P'
//               elsewhere (-inf for PartialMax), not the whole reduced tensor; the other valid
//               path, AllReduce then B -> P', leaves the whole on every rank. Both are P' layouts:
//               a rank's local piece of a partial layout is only its share, and the logical tensor
//               is the P' combination (sum, maximum, minimum) of every rank's piece.
// On an N-D mesh an axis can change directly only when no inner axis (a later one) is split
// along a dimension the change splits or gathers, and no inner axis is partial of another kind
// where the change reduces; otherwise the conversion passes through Broadcast. Among the valid
// orders (and detours through Broadcast) boxing takes the one that sends the fewest bytes per
// rank (boxingCost), and logs its choice with CFX_DEBUG=INFO.
//
// Inputs are exact for exact data: a conversion moves elements or reduces them with Conflux's
// deterministic reductions, so converting and converting back gives the same bits.
#pragma once

#include <conflux/conflux.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train::sbp {

struct Layout {
  enum class Kind { kSplit, kBroadcast, kPartialSum, kPartialMax, kPartialMin };
  Kind kind = Kind::kBroadcast;
  int dim = 0;  // Split only

  static Layout split(int dim) { return Layout{Kind::kSplit, dim}; }
  static Layout broadcast() { return Layout{Kind::kBroadcast, 0}; }
  static Layout partialSum() { return Layout{Kind::kPartialSum, 0}; }
  static Layout partialMax() { return Layout{Kind::kPartialMax, 0}; }
  static Layout partialMin() { return Layout{Kind::kPartialMin, 0}; }

  bool isSplit() const { return kind == Kind::kSplit; }
  bool isPartial() const { return kind == Kind::kPartialSum || kind == Kind::kPartialMax || kind == Kind::kPartialMin; }
  bool operator==(const Layout& o) const { return kind == o.kind && (kind != Kind::kSplit || dim == o.dim); }
};

// One layout per mesh axis.
using Signature = std::vector<Layout>;
using Shape = std::vector<int64_t>;

// "S(1)", "B", "P", "Pmax", "Pmin"; a signature as "(S(0), B)".
CFX_TRAIN_API std::string toString(const Layout& l);
CFX_TRAIN_API std::string toString(const Signature& s);

// The part [begin, end) of a dimension of `length` that part `index` of `parts` holds.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
CFX_TRAIN_API Range splitRange(int64_t length, int parts, int index);

// The local shape of a tensor of logical shape `shape` with signature `sig`, on the rank at mesh
// coordinates `coords` of a mesh of `mesh` (sizes per axis).
CFX_TRAIN_API Shape localShape(const Shape& shape, const Signature& sig, const std::vector<int>& mesh,
                               const std::vector<int>& coords);

// Bytes one rank sends to convert a tensor of `shape` and `dtype` from `from` to `to` on a mesh
// of `mesh`, along the cheapest valid path (ring algorithms: AllReduce 2(n-1)/n of the tensor,
// ReduceScatter, AllGather and AlltoAll (n-1)/n of the larger side; the largest rank's share
// for uneven splits).
CFX_TRAIN_API uint64_t boxingCost(const Signature& from, const Signature& to, const Shape& shape,
                                  cfxDataType_t dtype, const std::vector<int>& mesh);
// The steps of that path, for logs and tests: "axis 1: S(0) -> B (AllGather); axis 0: ...".
CFX_TRAIN_API std::string boxingPlan(const Signature& from, const Signature& to, const Shape& shape,
                                     cfxDataType_t dtype, const std::vector<int>& mesh);

// A communicator viewed as a mesh. Keeps the communicator (not owned) and owns one
// sub-communicator per axis (the ranks that differ only in that axis' coordinate).
class CFX_TRAIN_API Placement {
 public:
  // The product of `mesh` must equal the communicator's size (a 1-D mesh: {size}). Collective:
  // every rank of `comm` calls it.
  Placement(cfxComm_t comm, std::vector<int> mesh);
  ~Placement();
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  int axes() const;
  const std::vector<int>& mesh() const;
  const std::vector<int>& coords() const;  // this rank's
  cfxComm_t comm() const;
  cfxComm_t axisComm(int axis) const;

 private:
  friend void boxing(const Placement&, const void*, const Signature&, void*, const Signature&, const Shape&,
                     cfxDataType_t);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Converts this rank's local tensor `in` (signature `from`) into `out` (signature `to`) for a
// logical tensor of `shape` and `dtype`; each buffer holds localShape() elements, row-major.
// `in` and `out` must not overlap. Collective over the placement: every rank calls it with the
// same arguments but its own buffers. Throws Error (cfxInvalidArgument for a bad signature,
// shape or datatype; the Conflux code of a failed collective otherwise). Partial layouts need a
// datatype the op reduces (all of Conflux's).
CFX_TRAIN_API void boxing(const Placement& placement, const void* in, const Signature& from, void* out,
                          const Signature& to, const Shape& shape, cfxDataType_t dtype);

}  // namespace conflux::train::sbp
