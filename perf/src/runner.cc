#include "runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cases.h"
#include "device_memory.h"
#include "options.h"

namespace cfxperf {

namespace {

using Clock = std::chrono::steady_clock;

cfxtest::CollKind kindOf(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return cfxtest::CollKind::kAllReduce;
    case Coll::kAllGather: return cfxtest::CollKind::kAllGather;
    case Coll::kReduceScatter: return cfxtest::CollKind::kReduceScatter;
    case Coll::kAlltoAll: return cfxtest::CollKind::kAlltoAll;
    case Coll::kBroadcast: return cfxtest::CollKind::kBroadcast;
    case Coll::kReduce: return cfxtest::CollKind::kReduce;
    case Coll::kSendRecv: return cfxtest::CollKind::kSendRecv;
    case Coll::kAlltoAllv: return cfxtest::CollKind::kAlltoAllv;
  }
  return cfxtest::CollKind::kAllReduce;
}

bool hasOp(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce; }
bool hasRoot(Coll c) { return c == Coll::kBroadcast || c == Coll::kReduce; }
// Collectives whose "size" is the whole n-block buffer (nccl-tests' convention).
bool blockwise(Coll c) {
  return c == Coll::kAllGather || c == Coll::kReduceScatter || c == Coll::kAlltoAll || c == Coll::kAlltoAllv;
}

// nccl-tests' bus bandwidth factors (doc/PERFORMANCE.md).
double busFactor(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2.0 * (n - 1) / n;
    case Coll::kAllGather:
    case Coll::kReduceScatter:
    case Coll::kAlltoAll:
    case Coll::kAlltoAllv: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

// A call's buffers mirrored on the GPU at the same offsets (so in-place stays in place); with no
// device memory, the host buffers themselves.
class Mirror {
 public:
  Mirror(DeviceMemory* m, const cfxtest::CallBuffers& b) : m_(m), b_(b) {
    if (m_ == nullptr) return;
    send_ = static_cast<uint8_t*>(m_->alloc(b.send.size()));
    recv_ = static_cast<uint8_t*>(m_->alloc(b.recv.size()));
    upload();
  }
  ~Mirror() {
    if (m_ == nullptr) return;
    m_->release(send_);
    m_->release(recv_);
  }
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;

  const void* sendPtr() const { return map(b_.sendPtr); }
  void* recvPtr() const { return const_cast<void*>(map(b_.recvPtr)); }
  void upload() {
    if (m_ == nullptr) return;
    m_->upload(send_, b_.send.data(), b_.send.size());
    m_->upload(recv_, b_.recv.data(), b_.recv.size());
  }
  // Both buffers: in-place ReduceScatter's output lies in the send buffer.
  void download(cfxtest::CallBuffers& b) {
    if (m_ == nullptr) return;
    m_->download(b.recv.data(), recv_, b.recv.size());
    m_->download(b.send.data(), send_, b.send.size());
  }

 private:
  const void* map(const void* p) const {
    if (m_ == nullptr || p == nullptr) return p;
    const auto* q = static_cast<const uint8_t*>(p);
    if (q >= b_.recv.data() && q <= b_.recv.data() + b_.recv.size()) return recv_ + (q - b_.recv.data());
    return send_ + (q - b_.send.data());
  }
  DeviceMemory* m_;
  const cfxtest::CallBuffers& b_;
  uint8_t* send_ = nullptr;
  uint8_t* recv_ = nullptr;
};

struct Result {
  double usec = 0;
  double algbw = 0;
  double busbw = 0;
  long wrong = -1;  // -1: not checked
  bool skipped = false;  // the backend has no such variant
};

class Perf {
 public:
  Perf(Coll c, const Options& o, Backend& b, DeviceMemory* dev)
      : c_(c), o_(o), b_(b), dev_(dev), n_(b.size()), me_(b.rank()) {}

  int run() {
    preamble();
    long totalWrong = 0;
    double busSum = 0;
    int rows = 0;
    std::string json;
    for (cfxDataType_t t : o_.types) {
      for (cfxRedOp_t op : hasOp(c_) ? o_.ops : std::vector<cfxRedOp_t>{cfxSum}) {
        if (!b_.supports(c_, t, op)) {
          if (me_ == 0) std::printf("# %s %s: not supported by %s, skipped\n", typeName(t), opName(op), b_.name().c_str());
          continue;
        }
        for (size_t bytes = o_.minBytes; bytes <= o_.maxBytes; bytes = next(bytes)) {
          Row row = measure(bytes, t, op);
          totalWrong += std::max(0L, row.out.wrong) + std::max(0L, row.in.wrong);
          busSum += row.out.busbw;
          ++rows;
          print(row, t, op);
          json += jsonRow(row, t, op);
          if (next(bytes) <= bytes) break;
        }
      }
    }
    if (me_ == 0) {
      std::printf("# Out of bounds values : %ld %s\n", totalWrong, totalWrong == 0 ? "OK" : "FAILED");
      std::printf("# Avg bus bandwidth    : %g \n#\n", rows ? busSum / rows : 0.0);
      std::fflush(stdout);
      writeJson(json);
    }
    return totalWrong == 0 ? 0 : 1;
  }

 private:
  struct Row {
    size_t bytes, count;
    Result out, in;
  };

  size_t next(size_t bytes) const {
    if (o_.stepBytes) return bytes + o_.stepBytes;
    return static_cast<size_t>(std::ceil(static_cast<double>(bytes) * o_.stepFactor));
  }

  void preamble() {
    struct Who {
      int pid;
      char host[64];
      char device[64];
    } me{static_cast<int>(getpid()), {}, {}};
    gethostname(me.host, sizeof(me.host) - 1);
    std::snprintf(me.device, sizeof(me.device), "%s", dev_ ? dev_->name().c_str() : "cpu");
    std::vector<Who> all(n_);
    b_.allGatherBytes(&me, all.data(), sizeof(Who));
    if (me_ != 0) return;
    std::printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d agg iters: 1 "
                "validation: %d graph: 0\n#\n# Using devices\n",
                o_.minBytes, o_.maxBytes, o_.stepBytes ? static_cast<double>(o_.stepBytes) : o_.stepFactor,
                o_.stepBytes ? "bytes" : "factor", o_.warmup, o_.iters, o_.check ? 1 : 0);
    for (int r = 0; r < n_; ++r) {
      std::printf("#  Rank %2d Group  0 Pid %6d on %10s device  0 [%s] %s %s\n", r, all[r].pid, all[r].host,
                  all[r].device, b_.name().c_str(), b_.device().c_str());
    }
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
    std::printf("# %10s  %12s  %8s  %6s  %6s %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
                "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  Row measure(size_t requested, cfxDataType_t t, cfxRedOp_t op) {
    const size_t es = cfxtest::typeSize(t);
    size_t total = requested / es;
    if (blockwise(c_)) total = total / n_ * n_;
    Row row{total * es, total, {}, {}};
    const size_t count = blockwise(c_) ? total / n_ : total;
    const int root = hasRoot(c_) ? o_.root : -1;
    const cfxtest::Pattern pat(t, op, n_);
    for (bool inPlace : {false, true}) {
      Result& r = inPlace ? row.in : row.out;
      if (count == 0) continue;
      if (inPlace && c_ == Coll::kAlltoAllv) {  // no in-place form (Conflux's, as NCCL's v-less API)
        r.skipped = true;
        continue;
      }
      if (c_ == Coll::kSendRecv && inPlace) {  // nccl-tests' sendrecv has no in-place variant
        r = row.out;
        continue;
      }
      if (inPlace && !b_.supportsInPlace(c_)) {
        r.skipped = true;
        continue;
      }
      cfxtest::CallBuffers buf =
          cfxtest::makeCall(kindOf(c_), pat, me_, n_, std::max(root, 0), count, inPlace);
      Mirror mirror(dev_, buf);
      OpArgs a{c_, mirror.sendPtr(), mirror.recvPtr(), count, t, op, std::max(root, 0), inPlace};
      a.sendCounts = buf.sendCounts.data();
      a.sendDispls = buf.sendDispls.data();
      a.recvCounts = buf.recvCounts.data();
      a.recvDispls = buf.recvDispls.data();
      for (int i = 0; i < o_.warmup; ++i) b_.run(a, o_.blocking);
      b_.sync();
      barrier();
      auto t0 = Clock::now();
      for (int i = 0; i < o_.iters; ++i) b_.run(a, o_.blocking);
      b_.sync();
      double usec = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / o_.iters;
      // The slowest rank defines the collective's time.
      std::vector<double> times(n_);
      b_.allGatherBytes(&usec, times.data(), sizeof(double));
      r.usec = *std::max_element(times.begin(), times.end());
      r.algbw = static_cast<double>(row.bytes) / (r.usec * 1e-6) / 1e9;
      r.busbw = r.algbw * busFactor(c_, n_);
      if (o_.check) {
        cfxtest::refill(buf, pat);
        mirror.upload();
        b_.run(a, true);
        b_.sync();
        mirror.download(buf);
        std::string why;
        long wrong = static_cast<long>(cfxtest::verify(buf, pat, why));
        if (wrong && me_ >= 0) {
          std::fprintf(stderr, "rank %d: %s %s %s count %zu%s: %ld wrong values;%s\n", me_, cfxtest::collName(kindOf(c_)),
                       typeName(t), opName(op), count, inPlace ? " in-place" : "", wrong, why.c_str());
        }
        std::vector<long> all(n_);
        b_.allGatherBytes(&wrong, all.data(), sizeof(long));
        r.wrong = 0;
        for (long w : all) r.wrong += w;
      }
    }
    return row;
  }

  void barrier() {
    char x = 0;
    std::vector<char> all(n_);
    b_.allGatherBytes(&x, all.data(), 1);
  }

  static std::string timeStr(double usec) {
    char buf[32];
    if (usec < 1e4) std::snprintf(buf, sizeof(buf), "%7.2f", usec);
    else if (usec < 1e5) std::snprintf(buf, sizeof(buf), "%7.1f", usec);
    else std::snprintf(buf, sizeof(buf), "%7.0f", usec);
    return buf;
  }

  void print(const Row& row, cfxDataType_t t, cfxRedOp_t op) const {
    if (me_ != 0) return;
    std::printf("%12zu  %12zu  %8s  %6s  %6i", row.bytes, row.count, typeName(t), hasOp(c_) ? opName(op) : "none",
                hasRoot(c_) ? o_.root : -1);
    for (const Result* r : {&row.out, &row.in}) {
      if (r->skipped) {
        std::printf("  %7s  %6s  %6s  %5s", "N/A", "N/A", "N/A", "N/A");
      } else if (r->wrong < 0) {
        std::printf("  %7s  %6.2f  %6.2f  %5s", timeStr(r->usec).c_str(), r->algbw, r->busbw, "N/A");
      } else {
        std::printf("  %7s  %6.2f  %6.2f  %5ld", timeStr(r->usec).c_str(), r->algbw, r->busbw, r->wrong);
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  std::string jsonRow(const Row& row, cfxDataType_t t, cfxRedOp_t op) const {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"backend\":\"%s\",\"collective\":\"%s\",\"nranks\":%d,\"size\":%zu,\"count\":%zu,\"type\":\"%s\","
                  "\"redop\":\"%s\",\"root\":%d,\"out_of_place\":{\"time_us\":%.3f,\"algbw\":%.4f,\"busbw\":%.4f,"
                  "\"wrong\":%ld},\"in_place\":{\"time_us\":%.3f,\"algbw\":%.4f,\"busbw\":%.4f,\"wrong\":%ld}}",
                  rowsWritten_++ ? ",\n" : "", b_.name().c_str(), cfxtest::collName(kindOf(c_)), n_, row.bytes,
                  row.count, typeName(t), hasOp(c_) ? opName(op) : "none", hasRoot(c_) ? o_.root : -1, row.out.usec,
                  row.out.algbw, row.out.busbw, row.out.wrong, row.in.usec, row.in.algbw, row.in.busbw, row.in.wrong);
    return buf;
  }

  void writeJson(const std::string& rows) const {
    if (o_.jsonPath.empty()) return;
    FILE* f = std::fopen(o_.jsonPath.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", o_.jsonPath.c_str());
      return;
    }
    std::fprintf(f, "[\n%s\n]\n", rows.c_str());
    std::fclose(f);
  }

  Coll c_;
  const Options& o_;
  Backend& b_;
  DeviceMemory* dev_;  // null: host buffers
  int n_, me_;
  mutable int rowsWritten_ = 0;
};

int localRank() {
  for (const char* name : {"CFX_LOCAL_RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

// -M: CUDA buffers where asked (an error if impossible) or, by default, where the backend and the
// machine have them; else host buffers.
std::unique_ptr<DeviceMemory> chooseBuffers(const Options& o, Backend& b) {
  if (o.registered) {  // -R 1: registered host memory
    if (o.buffers == Options::Buffers::kCuda) throw std::runtime_error("-R 1 takes host buffers (-M host)");
    std::unique_ptr<DeviceMemory> reg = b.registeredMemory();
    if (reg == nullptr) throw std::runtime_error("-R 1: " + b.name() + " has no registered buffers");
    return reg;
  }
  if (o.buffers == Options::Buffers::kHost) return nullptr;
  std::string why = b.name() + " takes host buffers only";
  std::unique_ptr<DeviceMemory> dev = b.acceptsDevice() ? openCudaMemory(localRank(), &why) : nullptr;
  if (dev == nullptr && o.buffers == Options::Buffers::kCuda) throw std::runtime_error("-M cuda: " + why);
  if (dev != nullptr) b.useDevice(dev->device());
  return dev;
}

}  // namespace

int runPerf(Coll c, int argc, char** argv) {
  const char* prog = argv[0];
  try {
    Options o = parseOptions(argc, argv, prog);
    std::unique_ptr<Backend> b = makeBackend(argc, argv, o.timeoutSeconds);
    std::unique_ptr<DeviceMemory> dev = chooseBuffers(o, *b);
    return Perf(c, o, *b, dev.get()).run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", prog, e.what());
    return 1;
  }
}

}  // namespace cfxperf
