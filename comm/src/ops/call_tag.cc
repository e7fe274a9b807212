#include "ops/call_tag.h"

#include "reduce/kernels.h"

namespace conflux {

namespace {
constexpr int kCountBits = 36;
constexpr int kRootBits = 17;
constexpr int kOpBits = 3;
constexpr int kTypeBits = 4;
constexpr int kCollBits = 3;
constexpr int kRootShift = kCountBits;
constexpr int kOpShift = kRootShift + kRootBits;
constexpr int kTypeShift = kOpShift + kOpBits;
constexpr int kCollShift = kTypeShift + kTypeBits;
static_assert(kCollShift + kCollBits == 63, "the top bit marks a packed call");

constexpr uint64_t mask(int bits) { return (uint64_t{1} << bits) - 1; }
uint64_t field(int64_t v, int bits, int shift) { return (static_cast<uint64_t>(v) & mask(bits)) << shift; }
int64_t unfield(uint64_t c, int bits, int shift) { return static_cast<int64_t>((c >> shift) & mask(bits)); }
}  // namespace

uint64_t packCall(const OpDescriptor& d) {
  return (uint64_t{1} << 63) | field(d.coll, kCollBits, kCollShift) | field(d.datatype, kTypeBits, kTypeShift) |
         field(d.op + 1, kOpBits, kOpShift) | field(d.root + 1, kRootBits, kRootShift) |
         field(static_cast<int64_t>(d.count), kCountBits, 0);
}

OpDescriptor unpackCall(uint64_t call) {
  OpDescriptor d;
  d.coll = static_cast<int32_t>(unfield(call, kCollBits, kCollShift));
  d.datatype = static_cast<int32_t>(unfield(call, kTypeBits, kTypeShift));
  d.op = static_cast<int32_t>(unfield(call, kOpBits, kOpShift)) - 1;
  d.root = static_cast<int32_t>(unfield(call, kRootBits, kRootShift)) - 1;
  d.count = static_cast<uint64_t>(unfield(call, kCountBits, 0));
  return d;
}

std::string describeCall(const OpDescriptor& d) {
  std::string s = std::string(collectiveName(d.coll)) + " ";
  if (d.coll < kFirstVectorColl) s += "count " + std::to_string(d.count) + " ";  // v: counts per rank
  s += reduce::dataTypeName(static_cast<cfxDataType_t>(d.datatype));
  if (d.op >= 0) s += std::string(" ") + reduce::redOpName(static_cast<cfxRedOp_t>(d.op));
  if (d.root >= 0) s += " root " + std::to_string(d.root);
  return s;
}

std::string describeCallTag(const net::CallTag& t) {
  return "call #" + std::to_string(t.seq) + " (" + describeCall(unpackCall(t.call)) + ")";
}

}  // namespace conflux
