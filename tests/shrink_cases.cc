#include "shrink_cases.h"

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "coll_case.h"

namespace cfxtest {

namespace {

using Clock = std::chrono::steady_clock;

// One large call of `c` (every rank's buffers sized for n ranks).
struct Large {
  static constexpr size_t kCount = size_t{1} << 20;
  int n;
  std::vector<float> send, recv;
  std::vector<size_t> counts, displs;
  explicit Large(int nranks)
      : n(nranks), send(kCount * nranks, 1.0f), recv(kCount * nranks), counts(nranks, kCount), displs(nranks) {
    for (int r = 0; r < n; ++r) displs[r] = kCount * r;
  }
  cfxResult_t call(CollKind c, const Rank& rk, cfxStream_t s) {
    const int next = (rk.rank + 1) % n, prev = (rk.rank + n - 1) % n;
    switch (c) {
      case CollKind::kAllReduce: return cfxAllReduce(send.data(), recv.data(), kCount, cfxFloat32, cfxSum, rk.comm, s);
      case CollKind::kReduce: return cfxReduce(send.data(), recv.data(), kCount, cfxFloat32, cfxSum, 0, rk.comm, s);
      case CollKind::kBroadcast: return cfxBroadcast(send.data(), recv.data(), kCount, cfxFloat32, 0, rk.comm, s);
      case CollKind::kAllGather: return cfxAllGather(send.data(), recv.data(), kCount, cfxFloat32, rk.comm, s);
      case CollKind::kReduceScatter:
        return cfxReduceScatter(send.data(), recv.data(), kCount, cfxFloat32, cfxSum, rk.comm, s);
      case CollKind::kAlltoAll: return cfxAlltoAll(send.data(), recv.data(), kCount, cfxFloat32, rk.comm, s);
      case CollKind::kAlltoAllv:
        return cfxAlltoAllv(send.data(), counts.data(), displs.data(), recv.data(), counts.data(), displs.data(),
                            cfxFloat32, rk.comm, s);
      case CollKind::kSendRecv: {
        cfxGroupStart();
        cfxSend(send.data(), kCount, cfxFloat32, next, rk.comm, s);
        cfxRecv(recv.data(), kCount, cfxFloat32, prev, rk.comm, s);
        return cfxGroupEnd();
      }
    }
    return cfxInternalError;
  }
};

std::string err(const std::string& what, cfxComm_t comm) { return what + ": " + cfxGetLastError(comm); }

// Each rank sends 1031 exact values to the next and checks those of the previous.
std::string ringCheck(const Rank& rk) {
  const int n = rk.nranks, next = (rk.rank + 1) % n, prev = (rk.rank + n - 1) % n;
  std::vector<int32_t> out(1031), in(1031, -1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = rk.rank * 100000 + static_cast<int32_t>(i);
  cfxGroupStart();
  cfxSend(out.data(), out.size(), cfxInt32, next, rk.comm, nullptr);
  cfxRecv(in.data(), in.size(), cfxInt32, prev, rk.comm, nullptr);
  if (cfxGroupEnd() != cfxSuccess) return err("Send/Recv ring", rk.comm);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != prev * 100000 + static_cast<int32_t>(i)) return "Send/Recv ring: element " + std::to_string(i) + " wrong";
  }
  return "";
}

}  // namespace

std::string checkShrunk(cfxComm_t shrunk, int expectSize, int expectRank, CollKind c) {
  int size = -1, rank = -1;
  if (cfxCommCount(shrunk, &size) != cfxSuccess || cfxCommUserRank(shrunk, &rank) != cfxSuccess) {
    return err("count/rank of the shrunk communicator", shrunk);
  }
  if (size != expectSize || rank != expectRank) {
    return "shrunk communicator is rank " + std::to_string(rank) + " of " + std::to_string(size) + ", expected " +
           std::to_string(expectRank) + " of " + std::to_string(expectSize);
  }
  Rank nr{rank, size, shrunk};
  std::string e = runCase(nr, CollKind::kAllReduce, cfxInt32, cfxSum, 1031, false);
  if (!e.empty()) return e;
  if (c == CollKind::kSendRecv || c == CollKind::kAlltoAllv) return ringCheck(nr);
  e = runCase(nr, c, cfxFloat32, cfxSum, 7, true);
  if (e.empty()) e = runCase(nr, c, cfxBfloat16, cfxMax, 100003, false);
  return e;
}

std::string killAndShrink(Rank& rk, int victim, CollKind c, double* shrinkSeconds) {
  const int n = rk.nranks;
  Large big(n);
  // Everyone is up, and the collective works, before the kill.
  if (big.call(CollKind::kAllReduce, rk, nullptr) != cfxSuccess) return err("first AllReduce", rk.comm);
  if (rk.rank == victim) {
    cfxStream_t s;
    if (cfxStreamCreate(&s) != cfxSuccess) return "cfxStreamCreate";
    for (int k = 0; k < 4; ++k) big.call(c, rk, s);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    raise(SIGKILL);
  }
  cfxResult_t r = cfxSuccess;
  for (int k = 0; k < 64 && r == cfxSuccess; ++k) r = big.call(c, rk, nullptr);
  if (r == cfxSuccess) return std::string("64 calls of ") + collName(c) + " succeeded with rank " + std::to_string(victim) + " killed";
  const auto failedAt = Clock::now();
  std::vector<int> failed(n, -1);
  int count = -1;
  if (cfxCommGetFailedRanks(rk.comm, failed.data(), n, &count) != cfxSuccess) return err("cfxCommGetFailedRanks", rk.comm);
  if (count != 1 || failed[0] != victim) {
    return "cfxCommGetFailedRanks gave " + std::to_string(count) + " rank(s), first " + std::to_string(failed[0]) +
           ", expected rank " + std::to_string(victim) + " alone";
  }
  cfxComm_t shrunk = nullptr;
  if (cfxCommShrink(rk.comm, failed.data(), count, &shrunk, nullptr, CFX_SHRINK_ABORT) != cfxSuccess) {
    return err("cfxCommShrink", rk.comm);
  }
  if (shrinkSeconds) *shrinkSeconds = std::chrono::duration<double>(Clock::now() - failedAt).count();
  std::string e = checkShrunk(shrunk, n - 1, rk.rank - (rk.rank > victim ? 1 : 0), c);
  if (cfxCommDestroy(shrunk) != cfxSuccess && e.empty()) e = err("cfxCommDestroy of the shrunk communicator", shrunk);
  if (cfxCommAbort(rk.comm) != cfxSuccess && e.empty()) e = "cfxCommAbort of the failed communicator";
  rk.comm = nullptr;
  return e;
}

}  // namespace cfxtest
