// DDP: buckets of gradients, reduced with one asynchronous AllReduce (Avg) each.
//
// Lifetime of a step: markReady() copies a gradient into its bucket's staging buffer (converting
// to bf16 if the wire type asks), and when a bucket's last gradient arrives, issues every bucket
// that is complete and whose predecessors are issued, in bucket order, on the DDP's stream. The
// stream's work runs on the communicator's progress thread, overlapping the rest of backward.
// finishBackward() waits for the stream and copies the averages back into the gradients.
#include "conflux/train/ddp.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "agreement.h"

namespace conflux::train {
namespace {

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // canonical quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                        // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Param {
  std::string name;
  void* data;
  void* grad;
  size_t count;
  cfxDataType_t dtype;
  int bucket = -1;
  size_t offset = 0;  // elements into the bucket
  bool ready = false;
};

struct Bucket {
  std::vector<int> params;
  size_t elements = 0;
  cfxDataType_t dtype = cfxFloat32;  // the parameters' datatype
  cfxDataType_t wire = cfxFloat32;   // the datatype reduced
  std::vector<std::byte> buffer;     // elements * size(wire)
  int pending = 0;                   // gradients not yet ready this step
};

}  // namespace

struct DistributedDataParallel::Impl {
  cfxComm_t comm;
  DdpOptions opts;
  cfxStream_t stream = nullptr;
  std::vector<Param> params;
  std::vector<Bucket> buckets;
  bool finalized = false;
  bool failed = false;
  int noSyncDepth = 0;
  int nextLaunch = 0;  // the first bucket not yet issued this step
  DdpStats stats, current;

  Param& param(int index, const char* what) {
    if (!finalized) throw Error(cfxInvalidUsage, std::string(what) + " before finalize()");
    if (failed) throw Error(cfxInvalidUsage, std::string(what) + ": this DDP failed earlier and aborted its communicator");
    if (index < 0 || index >= static_cast<int>(params.size())) {
      throw Error(cfxInvalidArgument, std::string(what) + ": parameter index " + std::to_string(index) +
                                          " is not registered (" + std::to_string(params.size()) + " parameters)");
    }
    return params[static_cast<size_t>(index)];
  }

  void buildBuckets() {
    Bucket cur;
    size_t curBytes = 0;
    auto close = [&] {
      if (cur.params.empty()) return;
      buckets.push_back(std::move(cur));
      cur = Bucket{};
      curBytes = 0;
    };
    for (int i = static_cast<int>(params.size()) - 1; i >= 0; --i) {
      Param& p = params[static_cast<size_t>(i)];
      size_t bytes = p.count * dtypeBytes(p.dtype);
      if (!cur.params.empty() && (cur.dtype != p.dtype || curBytes + bytes > opts.bucketCapBytes)) close();
      if (cur.params.empty()) {
        cur.dtype = p.dtype;
        cur.wire = (opts.wire == WireType::kBf16 && p.dtype == cfxFloat32) ? cfxBfloat16 : p.dtype;
      }
      p.bucket = static_cast<int>(buckets.size());
      p.offset = cur.elements;
      cur.params.push_back(i);
      cur.elements += p.count;
      curBytes += bytes;
    }
    close();
    for (Bucket& b : buckets) {
      b.buffer.resize(b.elements * dtypeBytes(b.wire));
      b.pending = static_cast<int>(b.params.size());
    }
  }

  // Copies rank 0's parameters to every rank, one bucket-sized Broadcast at a time.
  void broadcastParameters() {
    std::vector<std::byte> staging;
    for (const Bucket& b : buckets) {
      size_t esize = dtypeBytes(b.dtype);
      staging.resize(b.elements * esize);
      for (int i : b.params) {
        const Param& p = params[static_cast<size_t>(i)];
        std::memcpy(staging.data() + p.offset * esize, p.data, p.count * esize);
      }
      check(cfxBroadcast(staging.data(), staging.data(), b.elements, b.dtype, 0, comm, nullptr),
            "DDP parameter broadcast", comm);
      for (int i : b.params) {
        const Param& p = params[static_cast<size_t>(i)];
        std::memcpy(p.data, staging.data() + p.offset * esize, p.count * esize);
      }
    }
  }

  void pack(const Param& p, Bucket& b) {
    if (b.wire == b.dtype) {
      size_t esize = dtypeBytes(b.dtype);
      std::memcpy(b.buffer.data() + p.offset * esize, p.grad, p.count * esize);
      return;
    }
    const float* g = static_cast<const float*>(p.grad);
    uint16_t* w = reinterpret_cast<uint16_t*>(b.buffer.data()) + p.offset;
    for (size_t k = 0; k < p.count; ++k) w[k] = toBf16(g[k]);
  }

  void unpack(const Param& p, const Bucket& b) {
    if (b.wire == b.dtype) {
      size_t esize = dtypeBytes(b.dtype);
      std::memcpy(p.grad, b.buffer.data() + p.offset * esize, p.count * esize);
      return;
    }
    float* g = static_cast<float*>(p.grad);
    const uint16_t* w = reinterpret_cast<const uint16_t*>(b.buffer.data()) + p.offset;
    for (size_t k = 0; k < p.count; ++k) g[k] = fromBf16(w[k]);
  }

  void launchReady() {
    while (nextLaunch < static_cast<int>(buckets.size()) && buckets[static_cast<size_t>(nextLaunch)].pending == 0) {
      Bucket& b = buckets[static_cast<size_t>(nextLaunch)];
      check(cfxAllReduce(b.buffer.data(), b.buffer.data(), b.elements, b.wire, cfxAvg, comm, stream),
            "DDP bucket AllReduce", comm);
      current.buckets++;
      current.wireBytes += b.buffer.size();
      ++nextLaunch;
    }
  }

  void resetStep() {
    for (Param& p : params) p.ready = false;
    for (Bucket& b : buckets) b.pending = static_cast<int>(b.params.size());
    nextLaunch = 0;
  }

  // A rank with unmarked gradients: the others are (or will be) waiting in AllReduces this rank
  // will never issue, so the communicator is aborted and they fail at once.
  [[noreturn]] void failMissing(const std::vector<std::string>& missing) {
    std::string names;
    for (size_t k = 0; k < missing.size() && k < 5; ++k) names += (k ? ", " : "") + missing[k];
    if (missing.size() > 5) names += ", ...";
    bool communicating = noSyncDepth == 0;
    if (communicating) {
      failed = true;
      (void)cfxCommAbort(comm);
      (void)cfxStreamSynchronize(stream);
    } else {
      resetStep();
    }
    throw Error(cfxInvalidUsage, "finishBackward: " + std::to_string(missing.size()) +
                                     " gradient(s) not marked ready: " + names +
                                     (communicating ? " (communicator aborted so the other ranks stop)" : ""));
  }
};

DistributedDataParallel::DistributedDataParallel(cfxComm_t comm, DdpOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (comm == nullptr) throw Error(cfxInvalidArgument, "DistributedDataParallel: comm is NULL");
  if (options.bucketCapBytes == 0) throw Error(cfxInvalidArgument, "DistributedDataParallel: bucketCapBytes is 0");
  impl_->comm = comm;
  impl_->opts = options;
  check(cfxStreamCreate(&impl_->stream), "cfxStreamCreate", nullptr);
}

DistributedDataParallel::~DistributedDataParallel() {
  if (impl_->stream != nullptr) {
    (void)cfxStreamSynchronize(impl_->stream);
    (void)cfxStreamDestroy(impl_->stream);
  }
}

int DistributedDataParallel::addParameter(std::string name, void* param, void* grad, size_t count,
                                          cfxDataType_t dtype) {
  if (impl_->finalized) throw Error(cfxInvalidUsage, "addParameter(" + name + ") after finalize()");
  size_t esize = dtypeBytes(dtype);
  (void)esize;
  if (count > 0 && (param == nullptr || grad == nullptr)) {
    throw Error(cfxInvalidArgument, "addParameter(" + name + "): NULL parameter or gradient buffer");
  }
  impl_->params.push_back(Param{std::move(name), param, grad, count, dtype});
  return static_cast<int>(impl_->params.size()) - 1;
}

void DistributedDataParallel::finalize() {
  Impl& m = *impl_;
  if (m.finalized) throw Error(cfxInvalidUsage, "finalize() called twice");
  Checksum sum;
  uint64_t elements = 0;
  for (const Param& p : m.params) {
    sum.add(p.count);
    sum.add(static_cast<uint64_t>(p.dtype));
    elements += p.count;
  }
  sum.add(m.opts.bucketCapBytes);
  sum.add(static_cast<uint64_t>(m.opts.wire));
  sum.add(m.opts.broadcastParameters ? 1 : 0);
  agreeOnRegistration(m.comm, "DDP parameter registrations", sum.value(), m.params.size(), elements);
  m.buildBuckets();
  if (m.opts.broadcastParameters) m.broadcastParameters();
  m.finalized = true;
}

void DistributedDataParallel::markReady(int index) {
  Impl& m = *impl_;
  Param& p = m.param(index, "markReady");
  if (p.ready) throw Error(cfxInvalidUsage, "markReady: gradient of " + p.name + " marked ready twice in one step");
  p.ready = true;
  if (m.noSyncDepth > 0) return;
  Bucket& b = m.buckets[static_cast<size_t>(p.bucket)];
  double t0 = nowSeconds();
  m.pack(p, b);
  m.current.copySeconds += nowSeconds() - t0;
  if (--b.pending == 0) m.launchReady();
}

void DistributedDataParallel::finishBackward() {
  Impl& m = *impl_;
  if (!m.finalized) throw Error(cfxInvalidUsage, "finishBackward before finalize()");
  if (m.failed) throw Error(cfxInvalidUsage, "finishBackward: this DDP failed earlier and aborted its communicator");
  std::vector<std::string> missing;
  for (const Param& p : m.params) {
    if (!p.ready) missing.push_back(p.name);
  }
  if (!missing.empty()) m.failMissing(missing);
  if (m.noSyncDepth > 0) {
    m.resetStep();
    return;
  }
  double t0 = nowSeconds();
  cfxResult_t r = cfxStreamSynchronize(m.stream);
  m.current.exposedSeconds = nowSeconds() - t0;
  if (r != cfxSuccess) {
    m.failed = true;
    check(r, "DDP gradient AllReduce", m.comm);
  }
  t0 = nowSeconds();
  for (const Bucket& b : m.buckets) {
    for (int i : b.params) m.unpack(m.params[static_cast<size_t>(i)], b);
  }
  m.current.copySeconds += nowSeconds() - t0;
  m.stats = m.current;
  m.current = DdpStats{};
  m.resetStep();
}

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp) { ddp_.impl_->noSyncDepth++; }
DistributedDataParallel::NoSync::~NoSync() { ddp_.impl_->noSyncDepth--; }

int DistributedDataParallel::bucketCount() const { return static_cast<int>(impl_->buckets.size()); }

int DistributedDataParallel::bucketOf(int index) const { return impl_->param(index, "bucketOf").bucket; }

size_t DistributedDataParallel::bucketBufferBytes() const {
  size_t total = 0;
  for (const Bucket& b : impl_->buckets) total += b.buffer.size();
  return total;
}

const DdpStats& DistributedDataParallel::lastStats() const { return impl_->stats; }

}  // namespace conflux::train
