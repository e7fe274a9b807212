#include "api/checks.h"

#include <string>

#include "common/error.h"
#include "reduce/kernels.h"
#include "stream.h"

namespace conflux::api {

namespace {
[[noreturn]] void invalid(const std::string& m) { throw Error(Status::kInvalidArgument, m); }
}  // namespace

void invalidDatatype(cfxDataType_t type) {
  invalid("invalid datatype " + std::to_string(static_cast<int>(type)) + " (valid: 0.." +
          std::to_string(cfxNumTypes - 1) + ")");
}

void invalidOp(cfxRedOp_t op) {
  invalid("invalid reduction op " + std::to_string(static_cast<int>(op)) + " (valid: 0.." +
          std::to_string(cfxNumOps - 1) + ", cfxSumExact, cfxAvgExact)");
}

void invalidRank(int rank, int nranks, const char* what) {
  invalid(std::string(what) + " " + std::to_string(rank) + " is out of range [0, " + std::to_string(nranks) + ")");
}

void overflowingCount(size_t count, cfxDataType_t type) {
  invalid("count " + std::to_string(count) + " of " + reduce::dataTypeName(type) + " overflows the address space");
}

void nullBuffer(const char* name) { invalid(std::string(name) + " is NULL"); }

void overlappingBuffers(const char* convention) {
  invalid(std::string("sendbuff and recvbuff overlap without being in place (in place means ") + convention + ")");
}

void checkStreamHandle(cfxStream_t stream) {
  if (!Stream::valid(stream)) invalid("stream is not a stream from cfxStreamCreate");
}

}  // namespace conflux::api
