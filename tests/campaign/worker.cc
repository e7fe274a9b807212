// One rank of a campaign job (tests/campaign/job.h): runs the job's steps, checks every result
// exactly, injects the job's fault when it is the faulty rank, and writes one line to
// <outdir>/rank<R>: "ok <wrong results>" or "error <code> <ms the failing call took> <message>";
// a survivor of a job that shrinks (Job::shrinks) adds a second: "shrink ok <ms> excluded <ranks>"
// or "shrink error <code> <ms> <message>".
//
//   campaign_worker SEED OUTDIR [hosts]   (the rendezvous, CFX_RANK and CFX_NRANKS from the driver;
//                                          "hosts": the job was drawn with namespace hosts there)
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "campaign/job.h"
#include "conflux/conflux.h"

namespace cfxcampaign {
namespace {

using Clock = std::chrono::steady_clock;

int64_t combine(int op, int64_t a, int64_t b) {
  if (op == cfxMax) return a < b ? b : a;
  if (op == cfxMin) return b < a ? b : a;
  return a + b;
}

struct Buffers {
  std::vector<int64_t> in;        // this rank's input, as integers
  std::vector<int64_t> expected;  // what its output must hold (empty: no output to check)
  size_t inCount = 0, outCount = 0;
};

// Inputs and expected outputs of step `s` for rank `me` (count: per-rank count of this rank's call).
Buffers plan(const Job& job, int s, const Step& st, int me, size_t count) {
  const int n = job.nranks;
  Buffers b;
  auto reduced = [&](size_t j) {
    int64_t acc = inputValue(s, 0, j);
    for (int r = 1; r < n; ++r) acc = combine(st.op, acc, inputValue(s, r, j));
    return acc;
  };
  const size_t blocks = (st.coll == Coll::kReduceScatter || st.coll == Coll::kAlltoAll) ? n : 1;
  b.inCount = count * blocks;
  for (size_t i = 0; i < b.inCount; ++i) b.in.push_back(inputValue(s, me, i));
  switch (st.coll) {
    case Coll::kAllReduce:
      for (size_t i = 0; i < count; ++i) b.expected.push_back(reduced(i));
      b.outCount = count;
      break;
    case Coll::kReduce:
      b.outCount = count;
      if (me == st.root) {
        for (size_t i = 0; i < count; ++i) b.expected.push_back(reduced(i));
      }
      break;
    case Coll::kBroadcast:
      for (size_t i = 0; i < count; ++i) b.expected.push_back(inputValue(s, st.root, i));
      b.outCount = count;
      break;
    case Coll::kAllGather:
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) b.expected.push_back(inputValue(s, r, i));
      }
      b.outCount = count * n;
      break;
    case Coll::kReduceScatter:
      for (size_t i = 0; i < count; ++i) b.expected.push_back(reduced(me * count + i));
      b.outCount = count;
      break;
    case Coll::kAlltoAll:
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) b.expected.push_back(inputValue(s, r, me * count + i));
      }
      b.outCount = count * n;
      break;
    case Coll::kSendRecv:
      for (size_t i = 0; i < count; ++i) b.expected.push_back(inputValue(s, (me + n - 1) % n, i));
      b.outCount = count;
      break;
  }
  return b;
}

size_t typeSize(int dtype) { return dtype == cfxInt32 || dtype == cfxFloat32 ? 4 : 8; }

void store(int dtype, void* p, size_t i, int64_t v) {
  switch (dtype) {
    case cfxInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case cfxInt64: static_cast<int64_t*>(p)[i] = v; break;
    case cfxFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    default: static_cast<double*>(p)[i] = static_cast<double>(v); break;
  }
}

bool equals(int dtype, const void* p, size_t i, int64_t v) {
  switch (dtype) {
    case cfxInt32: return static_cast<const int32_t*>(p)[i] == v;
    case cfxInt64: return static_cast<const int64_t*>(p)[i] == v;
    case cfxFloat32: return static_cast<const float*>(p)[i] == static_cast<float>(v);
    default: return static_cast<const double*>(p)[i] == static_cast<double>(v);
  }
}

// Issues step `s`'s call(s); returns the first error.
cfxResult_t issue(const Job& job, const Step& st, int me, size_t count, const void* in, void* out, cfxComm_t comm,
                  cfxStream_t stream) {
  const int n = job.nranks;
  const auto t = static_cast<cfxDataType_t>(st.dtype);
  const auto op = static_cast<cfxRedOp_t>(st.op);
  cfxStream_t s = st.stream ? stream : nullptr;
  cfxResult_t r = cfxSuccess;
  if (st.group) r = cfxGroupStart();
  if (r != cfxSuccess) return r;
  switch (st.coll) {
    case Coll::kAllReduce: r = cfxAllReduce(in, out, count, t, op, comm, s); break;
    case Coll::kReduce: r = cfxReduce(in, out, count, t, op, st.root, comm, s); break;
    case Coll::kBroadcast: r = cfxBroadcast(in, out, count, t, st.root, comm, s); break;
    case Coll::kAllGather: r = cfxAllGather(in, out, count, t, comm, s); break;
    case Coll::kReduceScatter: r = cfxReduceScatter(in, out, count, t, op, comm, s); break;
    case Coll::kAlltoAll: r = cfxAlltoAll(in, out, count, t, comm, s); break;
    case Coll::kSendRecv:
      r = cfxSend(in, count, t, (me + 1) % n, comm, s);
      if (r == cfxSuccess) r = cfxRecv(out, count, t, (me + n - 1) % n, comm, s);
      break;
  }
  if (st.group) {
    cfxResult_t g = cfxGroupEnd();
    if (r == cfxSuccess) r = g;
  }
  if (r == cfxSuccess && s != nullptr) r = cfxStreamSynchronize(s);
  return r;
}

// After the failure: the ranks that are gone, a shrink without them, and an exact AllReduce and
// Send/Recv ring on the new communicator. Returns the report's second line.
std::string recover(cfxComm_t comm) {
  int n = 0;
  cfxCommCount(comm, &n);
  std::vector<int> failed(static_cast<size_t>(n));
  int count = 0;
  const auto t0 = Clock::now();
  auto ms = [&] { return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()); };
  auto error = [&](cfxResult_t r, const char* what, cfxComm_t c) {
    std::string msg = cfxGetLastError(c);
    for (char& ch : msg) ch = ch == '\n' ? ' ' : ch;
    return "shrink error " + std::to_string(r) + " " + ms() + " " + what + ": " + msg;
  };
  cfxResult_t r = cfxCommGetFailedRanks(comm, failed.data(), n, &count);
  if (r != cfxSuccess) return error(r, "cfxCommGetFailedRanks", comm);
  cfxComm_t sub = nullptr;
  r = cfxCommShrink(comm, failed.data(), count, &sub, nullptr, CFX_SHRINK_ABORT);
  if (r != cfxSuccess) return error(r, "cfxCommShrink", comm);
  const std::string took = ms();
  int m = 0, me = 0;
  cfxCommCount(sub, &m);
  cfxCommUserRank(sub, &me);
  std::vector<int64_t> in(7, me + 1), out(7, 0), ring(7, -1);
  r = cfxAllReduce(in.data(), out.data(), in.size(), cfxInt64, cfxSum, sub, nullptr);
  if (r == cfxSuccess) {
    cfxGroupStart();
    cfxSend(in.data(), in.size(), cfxInt64, (me + 1) % m, sub, nullptr);
    cfxRecv(ring.data(), ring.size(), cfxInt64, (me + m - 1) % m, sub, nullptr);
    r = cfxGroupEnd();
  }
  std::string line = r != cfxSuccess ? error(r, "a call on the shrunk communicator", sub) : "";
  if (line.empty() && (out[6] != int64_t{m} * (m + 1) / 2 || ring[6] != (me + m - 1) % m + 1)) {
    line = "shrink error 0 " + took + " wrong results on the shrunk communicator";
  }
  cfxCommDestroy(sub);
  if (!line.empty()) return line;
  line = "shrink ok " + took + " excluded";
  for (int i = 0; i < count; ++i) line += " " + std::to_string(failed[i]);
  return line;
}

int run(uint64_t seed, const std::string& outdir, bool twoHosts) {
  const Job job = Job::fromSeed(seed, twoHosts);
  const int me = std::atoi(std::getenv("CFX_RANK"));
  const std::string outPath = outdir + "/rank" + std::to_string(me);
  auto report = [&](const std::string& line) {
    if (FILE* f = std::fopen(outPath.c_str(), "w")) {
      std::fprintf(f, "%s\n", line.c_str());
      std::fclose(f);
    }
  };
  cfxComm_t comm = nullptr;
  if (cfxCommInitFromEnv(&comm) != cfxSuccess) {
    report("error 0 0 init: " + std::string(cfxGetLastError(nullptr)));
    return 0;
  }
  // Everything is freed on every path that returns, so a sanitizer's exit status means a real leak.
  cfxStream_t stream = nullptr;
  cfxStreamCreate(&stream);
  const bool faulty = me == job.faultRank;
  long wrong = 0;
  bool aborted = false;
  for (int s = 0; s <= job.steps; ++s) {
    // The last step is a check every rank makes: a mismatch or failure nobody waited for earlier
    // (Broadcast's root waits for no one) shows here.
    const bool last = s == job.steps;
    Step st = last ? Step{Coll::kAllReduce, 2, cfxInt64, cfxMax, 0, false, false} : job.step(s);
    size_t count = st.count;
    std::thread side;
    if (faulty && s == job.faultStep) {
      switch (job.fault) {
        case Fault::kKill:
          side = std::thread([&] {
            std::this_thread::sleep_for(std::chrono::microseconds(seed % 3000));
            raise(SIGKILL);
          });
          break;
        case Fault::kStop: {
          const pid_t self = getpid();
          // Continues it once the others have failed: after the timeout, and across hosts after
          // the up to 2 s more a wait gives the other host's word (Health::checkTimeout).
          const unsigned wake = static_cast<unsigned>(std::atoi(std::getenv("CFX_TIMEOUT"))) + 4;
          if (fork() == 0) {
            sleep(wake);
            kill(self, SIGCONT);
            _exit(0);
          }
          raise(SIGSTOP);
          break;
        }
        case Fault::kMismatch: count += 3; break;  // 3 is no count a step uses
        case Fault::kMismatchColl:
          // A Send/Recv step's peers take no collective, and a collective of count 0 does
          // nothing (as in NCCL), so nobody could see it: a different count there.
          if (st.coll == Coll::kSendRecv || st.count == 0) {
            count += 3;
          } else {
            st.coll = st.coll == Coll::kAllReduce ? Coll::kAllGather : Coll::kAllReduce;
          }
          break;
        case Fault::kExit: _exit(0);
        case Fault::kAbort:
          aborted = true;
          side = std::thread([comm, seed] {
            std::this_thread::sleep_for(std::chrono::microseconds(seed % 3000));
            cfxCommAbort(comm);
          });
          break;
        case Fault::kLinkDown:  // this host's only link; the driver sets it up again after the job
          side = std::thread([seed] {
            std::this_thread::sleep_for(std::chrono::microseconds(seed % 3000));
            if (std::system("ip link set cfx0 down") != 0) std::abort();
          });
          break;
        case Fault::kNone:
        case Fault::kShmFull: break;
      }
    }
    Buffers b = plan(job, s, st, me, count);
    const size_t es = typeSize(st.dtype);
    std::vector<unsigned char> in(std::max<size_t>(b.inCount, 1) * es), out(std::max<size_t>(b.outCount, 1) * es, 0xab);
    for (size_t i = 0; i < b.inCount; ++i) store(st.dtype, in.data(), i, b.in[i]);
    const auto t0 = Clock::now();
    cfxResult_t r = aborted && !side.joinable() ? cfxInvalidArgument
                                                : issue(job, st, me, count, in.data(), out.data(), comm, stream);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    if (side.joinable()) side.join();
    if (r != cfxSuccess) {
      std::string msg = aborted ? "aborted" : cfxGetLastError(comm);
      for (char& c : msg) c = c == '\n' ? ' ' : c;
      std::string line = "error " + std::to_string(r) + " " + std::to_string(ms) + " step " + std::to_string(s) + " " +
                         collName(st.coll) + ": " + msg;
      if (job.shrinks() && !aborted) line += "\n" + recover(comm);
      report(line);
      cfxStreamDestroy(stream);
      if (!aborted) cfxCommDestroy(comm);
      return 0;
    }
    if (aborted) {  // the abort came after the call had finished: the handle is gone all the same
      report("error " + std::to_string(cfxAborted) + " 0 step " + std::to_string(s) + ": aborted after the call");
      cfxStreamDestroy(stream);
      return 0;
    }
    for (size_t i = 0; i < b.expected.size(); ++i) wrong += !equals(st.dtype, out.data(), i, b.expected[i]);
  }
  cfxStreamDestroy(stream);
  cfxCommDestroy(comm);
  report("ok " + std::to_string(wrong));
  return 0;
}

}  // namespace
}  // namespace cfxcampaign

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 4 && std::string(argv[3]) == "hosts")) {
    std::fprintf(stderr, "usage: campaign_worker SEED OUTDIR [hosts]\n");
    return 2;
  }
  return cfxcampaign::run(std::strtoull(argv[1], nullptr, 10), argv[2], argc == 4);
}
