#include "coll_case.h"

#include <vector>

namespace cfxtest {

using C = CollKind;

// Runs one case on this rank and checks the result exactly. Returns "" or a failure description.
std::string runCase(const Rank& rk, C c, cfxDataType_t t, cfxRedOp_t op, size_t count, bool inPlace) {
  const int n = rk.nranks, me = rk.rank;
  const Pattern pat(t, reduces(c) ? op : cfxSum, n);
  const int root = static_cast<int>((count + 1) % n);
  std::string what = std::string(collName(c)) + " " + typeName(t) + (reduces(c) ? std::string(" ") + opName(op) : "") +
                     " count " + std::to_string(count) + (inPlace ? " in-place" : " out-of-place") + " nranks " +
                     std::to_string(n) + " rank " + std::to_string(me) + ":";
  CallBuffers b = makeCall(c, pat, me, n, root, count, inPlace);
  const void* sp = b.sendPtr;
  void* rp = b.recvPtr;
  cfxResult_t res = cfxInternalError;
  switch (c) {
    case C::kAllReduce: res = cfxAllReduce(sp, rp, count, t, op, rk.comm, nullptr); break;
    case C::kReduce: res = cfxReduce(sp, rp, count, t, op, root, rk.comm, nullptr); break;
    case C::kBroadcast: res = cfxBroadcast(sp, rp, count, t, root, rk.comm, nullptr); break;
    case C::kAllGather: res = cfxAllGather(sp, rp, count, t, rk.comm, nullptr); break;
    case C::kReduceScatter: res = cfxReduceScatter(sp, rp, count, t, op, rk.comm, nullptr); break;
    case C::kAlltoAll: res = cfxAlltoAll(sp, rp, count, t, rk.comm, nullptr); break;
    case C::kSendRecv: break;
    case C::kAlltoAllv: break;
  }
  if (res != cfxSuccess) return what + " returned " + cfxGetErrorString(res) + ": " + cfxGetLastError(rk.comm);
  std::string why;
  if (verify(b, pat, why) != 0) return what + why;
  return "";
}

void runMatrix(const Rank& rk, C c) {
  std::vector<cfxRedOp_t> ops = {cfxSum};
  if (reduces(c)) ops = {cfxSum, cfxProd, cfxMax, cfxMin, cfxAvg};
  for (int t = 0; t < cfxNumTypes; ++t) {
    for (cfxRedOp_t op : ops) {
      for (size_t count : kSmallCounts) {
        for (bool inPlace : {false, true}) {
          std::string err = runCase(rk, c, static_cast<cfxDataType_t>(t), op, count, inPlace);
          ASSERT_EQ(err, "");
        }
      }
    }
  }
}

}  // namespace cfxtest
