#include "api/checks.h"

#include <cstdint>
#include <string>

#include "common/error.h"
#include "reduce/kernels.h"
#include "stream.h"

namespace conflux::api {

namespace {
[[noreturn]] void invalid(const std::string& m) { throw Error(Status::kInvalidArgument, m); }
}  // namespace

void checkDatatype(cfxDataType_t type) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= cfxNumTypes) {
    invalid("invalid datatype " + std::to_string(static_cast<int>(type)) + " (valid: 0.." +
            std::to_string(cfxNumTypes - 1) + ")");
  }
}

void checkOp(cfxRedOp_t op) {
  if ((static_cast<int>(op) < 0 || static_cast<int>(op) >= cfxNumOps) && op != cfxSumExact && op != cfxAvgExact) {
    invalid("invalid reduction op " + std::to_string(static_cast<int>(op)) + " (valid: 0.." +
            std::to_string(cfxNumOps - 1) + ", cfxSumExact, cfxAvgExact)");
  }
}

void checkRank(int rank, int nranks, const char* what) {
  if (rank < 0 || rank >= nranks) {
    invalid(std::string(what) + " " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
  }
}

size_t checkedBytes(size_t count, cfxDataType_t type, size_t multiplier) {
  size_t esize = reduce::dataTypeSize(type);
  size_t bytes = 0;
  if (__builtin_mul_overflow(count, esize, &bytes) || __builtin_mul_overflow(bytes, multiplier, &bytes) ||
      bytes > (SIZE_MAX >> 1)) {
    invalid("count " + std::to_string(count) + " of " + reduce::dataTypeName(type) + " overflows the address space");
  }
  return bytes;
}

void checkBuffer(const void* p, size_t bytes, const char* name) {
  if (p == nullptr && bytes > 0) invalid(std::string(name) + " is NULL");
}

void checkOverlap(const void* a, size_t aBytes, const void* b, size_t bBytes, const void* inPlaceA,
                  const char* convention) {
  if (a == nullptr || b == nullptr || aBytes == 0 || bBytes == 0 || a == inPlaceA) return;
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  if (pa < pb + bBytes && pb < pa + aBytes) {
    invalid(std::string("sendbuff and recvbuff overlap without being in place (in place means ") + convention + ")");
  }
}

void checkStream(cfxStream_t stream) {
  if (stream != nullptr && !Stream::valid(stream)) invalid("stream is not a stream from cfxStreamCreate");
}

}  // namespace conflux::api
