#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.h"
#include "reduce/kernels.h"
#include "vector_call.h"

namespace conflux {

namespace {

std::string describeHeader(uint64_t h) {
  const auto kind = static_cast<VectorKind>(h & 0xff);
  const auto type = static_cast<cfxDataType_t>((h >> 8) & 0xff);
  std::string s = std::string(vectorKindName(kind)) + "(" + reduce::dataTypeName(type);
  if (const uint64_t op = (h >> 16) & 0xff; op != 0) s += std::string(", ") + reduce::redOpName(static_cast<cfxRedOp_t>(op - 1));
  return s + ")";
}

}  // namespace

uint64_t headerOf(const VectorArgs& a) {
  const uint64_t op = a.kind == VectorKind::kReduceScatterv ? static_cast<uint64_t>(a.op) + 1 : 0;
  return static_cast<uint64_t>(a.kind) | static_cast<uint64_t>(a.datatype) << 8 | op << 16;
}

void checkLines(const VectorCall& s) {
  for (int r = 1; r < s.n; ++r) {
    if (s.header(r) != s.header(0)) {
      throw Error(Status::kInvalidUsage, "collective mismatch: rank 0 called " + describeHeader(s.header(0)) +
                                             ", rank " + std::to_string(r) + " called " + describeHeader(s.header(r)));
    }
  }
  const char* name = vectorKindName(s.a.kind);
  for (int i = 0; i < s.n; ++i) {
    for (int j = 0; j < s.n; ++j) {
      const uint64_t sent = s.sends(i, j), expected = s.expects(j, i);
      if (sent == expected) continue;
      const std::string ri = "rank " + std::to_string(i), rj = "rank " + std::to_string(j);
      std::string what;
      switch (s.a.kind) {
        case VectorKind::kAlltoAllv:
          what = ri + " sends " + std::to_string(sent) + " elements to " + rj + " (sendcounts[" + std::to_string(j) +
                 "]), which expects " + std::to_string(expected) + " (recvcounts[" + std::to_string(i) + "])";
          break;
        case VectorKind::kAllGatherv:
          what = ri + " sends " + std::to_string(sent) + " elements (sendcount), " + rj + " expects " +
                 std::to_string(expected) + " from it (recvcounts[" + std::to_string(i) + "])";
          break;
        case VectorKind::kReduceScatterv:
          what = ri + " has recvcounts[" + std::to_string(j) + "] = " + std::to_string(sent) + ", " + rj +
                 " has recvcounts[" + std::to_string(j) + "] = " + std::to_string(expected);
          break;
      }
      throw Error(Status::kInvalidUsage, std::string(name) + " count mismatch: " + what);
    }
  }
}

VectorCall::VectorCall(VectorArgs args, int nranks, int rank)
    : a(std::move(args)), n(nranks), me(rank), esize(reduce::dataTypeSize(a.datatype)) {
  if (a.kind == VectorKind::kReduceScatterv) received.resize(static_cast<size_t>(n));
}

void VectorCall::copyOwnBlock() const {
  if (a.kind == VectorKind::kReduceScatterv || pad > 0) return;
  const size_t bytes = a.sendCounts[me] * esize;
  auto* to = static_cast<std::byte*>(a.recv) + a.recvDispls[me] * esize;
  const std::byte* from = sendPtr(me);
  if (bytes > 0 && to != from) std::memmove(to, from, bytes);
}

static_assert(VectorLine::kLineBytes <= kMailboxBytes);

size_t VectorLine::room() const { return kLineBytes > countBytes() ? kLineBytes - countBytes() : 0; }

size_t VectorLine::slot() const { return n > 1 ? room() / static_cast<size_t>(n - 1) / 8 * 8 : 0; }

bool VectorLine::carries(size_t bytes) const { return bytes <= (kind == VectorKind::kAllGatherv ? room() : slot()); }

size_t VectorLine::offset(int from, int to) const {
  if (kind == VectorKind::kAllGatherv) return countBytes();
  return countBytes() + static_cast<size_t>(to < from ? to : to - 1) * slot();
}

size_t VectorLine::boxSlot() const {
  return n > 1 ? std::min(kVectorBoxBlockBytes, kVectorBoxBytes / static_cast<size_t>(n - 1) / 64 * 64) : 0;
}

bool VectorLine::inBox(size_t bytes) const {
  return !carries(bytes) && bytes <= (kind == VectorKind::kAllGatherv ? kVectorBoxBlockBytes : boxSlot());
}

size_t VectorLine::boxOffset(int from, int to) const {
  if (kind == VectorKind::kAllGatherv) return 0;
  return static_cast<size_t>(to < from ? to : to - 1) * boxSlot();
}

}  // namespace conflux
