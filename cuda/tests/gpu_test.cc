// The staged GPU path on a real GPU (several ranks share it): every collective x datatype x op x
// count, in and out of place, on device buffers, checked exactly; stream order with a producer
// kernel, the collective and a consumer kernel and no host synchronisation between them; a killed
// rank releasing the others' streams. Without an NVIDIA GPU it exits 77 (CTest's skip); a driver or
// runtime error on a machine that has one is a failure (gpu_presence.h).
#include <cuda_runtime.h>  // the typed cudaMalloc overloads
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <vector>

#include "cases.h"
#include "conflux/conflux_cuda.h"
#include "gpu_kernels.h"
#include "gpu_presence.h"
#include "harness.h"

using namespace cfxtest;

namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// One case: the pattern's buffers copied to the device, the CUDA call, the result copied back.
std::string runGpuCase(cfxCudaComm_t cc, cudaStream_t s, const Rank& rk, CollKind c, cfxDataType_t t, cfxRedOp_t op,
                       size_t count, bool inPlace) {
  const Pattern pat(t, reduces(c) ? op : cfxSum, rk.nranks);
  const int root = static_cast<int>((count + 1) % rk.nranks);
  CallBuffers b = makeCall(c, pat, rk.rank, rk.nranks, root, count, inPlace);
  const std::string what = std::string(collName(c)) + " " + typeName(t) + " " + opName(op) + " count " +
                           std::to_string(count) + (inPlace ? " in-place" : "");
  // The device image of the host buffers: the same offsets, so in-place stays in place.
  const size_t sendBytes = b.send.size(), recvBytes = b.recv.size();
  char *dsend = nullptr, *drecv = nullptr;
  if (cudaMalloc(&dsend, sendBytes + 1) != cudaSuccess || cudaMalloc(&drecv, recvBytes + 1) != cudaSuccess) {
    return what + ": cudaMalloc failed";
  }
  cudaMemcpy(dsend, b.send.data(), sendBytes, cudaMemcpyHostToDevice);
  cudaMemcpy(drecv, b.recv.data(), recvBytes, cudaMemcpyHostToDevice);
  auto toDevice = [&](const void* p) -> char* {
    if (p == nullptr) return nullptr;
    const auto* q = static_cast<const uint8_t*>(p);
    if (q >= b.recv.data() && q <= b.recv.data() + recvBytes) return drecv + (q - b.recv.data());
    return dsend + (q - b.send.data());
  };
  const void* sp = toDevice(b.sendPtr);
  void* rp = toDevice(b.recvPtr);
  cfxResult_t r = cfxInternalError;
  switch (c) {
    case CollKind::kAllReduce: r = cfxCudaAllReduce(sp, rp, count, t, op, cc, s); break;
    case CollKind::kReduce: r = cfxCudaReduce(sp, rp, count, t, op, root, cc, s); break;
    case CollKind::kBroadcast: r = cfxCudaBroadcast(sp, rp, count, t, root, cc, s); break;
    case CollKind::kAllGather: r = cfxCudaAllGather(sp, rp, count, t, cc, s); break;
    case CollKind::kReduceScatter: r = cfxCudaReduceScatter(sp, rp, count, t, op, cc, s); break;
    case CollKind::kAlltoAll: r = cfxCudaAlltoAll(sp, rp, count, t, cc, s); break;
    case CollKind::kSendRecv: break;
    case CollKind::kAlltoAllv: break;
  }
  std::string err;
  if (r != cfxSuccess) err = what + ": " + cfxCudaGetLastError(cc);
  if (err.empty() && cudaStreamSynchronize(s) != cudaSuccess) err = what + ": cudaStreamSynchronize failed";
  // A failure of the host part (a peer that left, say) is asynchronous, as in NCCL: the stream
  // still completes, so the result is only trusted once the communicator reports no error.
  cfxResult_t async = cfxSuccess;
  if (err.empty() && (cfxCudaCommSynchronize(cc) != cfxSuccess || cfxCudaCommGetAsyncError(cc, &async) != cfxSuccess ||
                      async != cfxSuccess)) {
    err = what + ": asynchronous error: " + cfxCudaGetLastError(cc);
  }
  if (err.empty()) {
    // Both device buffers come back: an in-place ReduceScatter's output is inside sendbuff.
    cudaMemcpy(b.send.data(), dsend, sendBytes, cudaMemcpyDeviceToHost);
    cudaMemcpy(b.recv.data(), drecv, recvBytes, cudaMemcpyDeviceToHost);
    std::string why;
    if (verify(b, pat, why) != 0) err = what + why;
  }
  cudaFree(dsend);
  cudaFree(drecv);
  return err;
}

void gpuMatrix(Rank& rk) {
  cfxCudaComm_t cc = nullptr;
  ASSERT_EQ(cfxCudaCommCreate(rk.comm, 0, &cc), cfxSuccess) << cfxCudaGetLastError(nullptr);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  const CollKind colls[] = {CollKind::kAllReduce, CollKind::kReduce, CollKind::kBroadcast,
                            CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kAlltoAll};
  for (CollKind c : colls) {
    std::vector<cfxRedOp_t> ops = {cfxSum};
    if (reduces(c)) ops = {cfxSum, cfxProd, cfxMax, cfxMin, cfxAvg};
    for (int t = 0; t < cfxNumTypes; ++t)
      for (cfxRedOp_t op : ops)
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}, size_t{1} << 21})
          for (bool inPlace : {false, true})
            ASSERT_EQ(runGpuCase(cc, s, rk, c, static_cast<cfxDataType_t>(t), op, count, inPlace), "");
  }
  cudaStreamDestroy(s);
  ASSERT_EQ(cfxCudaCommDestroy(cc), cfxSuccess);
}

}  // namespace

TEST(Gpu, EveryCollectiveDatatypeAndOp1Rank) { runRanks(1, gpuMatrix); }
TEST(Gpu, EveryCollectiveDatatypeAndOp2Ranks) { runRanks(2, gpuMatrix); }
TEST(Gpu, EveryCollectiveDatatypeAndOp3Ranks) { runRanks(3, gpuMatrix); }
TEST(Gpu, EveryCollectiveDatatypeAndOp4Ranks) { runRanks(4, gpuMatrix); }

// Producer kernel -> AllReduce -> consumer kernel on one stream, one host synchronisation at the end.
TEST(Gpu, StreamOrderProducerCollectiveConsumer) {
  runRanks(3, [](Rank& rk) {
    cfxCudaComm_t cc = nullptr;
    ASSERT_EQ(cfxCudaCommCreate(rk.comm, 0, &cc), cfxSuccess) << cfxCudaGetLastError(nullptr);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    const size_t n = size_t{3} << 20;
    float *in, *out, *seen;
    CUDA_OK(cudaMalloc(&in, n * 4));
    CUDA_OK(cudaMalloc(&out, n * 4));
    CUDA_OK(cudaMalloc(&seen, n * 4));
    CUDA_OK(cudaMemset(in, 0, n * 4));
    CUDA_OK(cudaDeviceSynchronize());
    for (int iter = 0; iter < 5; ++iter) {
      launchProduce(in, n, static_cast<float>(rk.rank + iter), 50'000'000LL, s);  // tens of ms late
      ASSERT_EQ(cfxCudaAllReduce(in, out, n, cfxFloat32, cfxSum, cc, s), cfxSuccess) << cfxCudaGetLastError(cc);
      launchConsume(out, seen, n, s);
      CUDA_OK(cudaStreamSynchronize(s));
      std::vector<float> host(n);
      CUDA_OK(cudaMemcpy(host.data(), seen, n * 4, cudaMemcpyDeviceToHost));
      const float want = static_cast<float>(rk.nranks * (rk.nranks - 1) / 2 + rk.nranks * iter);
      for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(host[i], want) << "iteration " << iter << " element " << i;
    }
    cudaFree(in);
    cudaFree(out);
    cudaFree(seen);
    cudaStreamDestroy(s);
    ASSERT_EQ(cfxCudaCommDestroy(cc), cfxSuccess);
  });
}

// Host buffers are an argument error on the CUDA calls.
TEST(Gpu, HostBufferIsAnArgumentError) {
  runRanks(1, [](Rank& rk) {
    cfxCudaComm_t cc = nullptr;
    ASSERT_EQ(cfxCudaCommCreate(rk.comm, 0, &cc), cfxSuccess) << cfxCudaGetLastError(nullptr);
    std::vector<float> host(16, 1.0f);
    float* dev = nullptr;
    CUDA_OK(cudaMalloc(&dev, 64));
    EXPECT_EQ(cfxCudaAllReduce(host.data(), dev, 16, cfxFloat32, cfxSum, cc, nullptr), cfxInvalidArgument);
    EXPECT_NE(std::string(cfxCudaGetLastError(cc)).find("host memory"), std::string::npos);
    cudaFree(dev);
    ASSERT_EQ(cfxCudaCommDestroy(cc), cfxSuccess);
  });
}

// Recording a Conflux call into a CUDA graph is a clear usage error, and the capture can end.
TEST(Gpu, GraphCaptureIsAUsageError) {
  runRanks(1, [](Rank& rk) {
    cfxCudaComm_t cc = nullptr;
    ASSERT_EQ(cfxCudaCommCreate(rk.comm, 0, &cc), cfxSuccess) << cfxCudaGetLastError(nullptr);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    float* dev = nullptr;
    CUDA_OK(cudaMalloc(&dev, 64));
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    EXPECT_EQ(cfxCudaAllReduce(dev, dev, 16, cfxFloat32, cfxSum, cc, s), cfxInvalidUsage);
    EXPECT_NE(std::string(cfxCudaGetLastError(cc)).find("CUDA graph"), std::string::npos) << cfxCudaGetLastError(cc);
    cudaGraph_t g = nullptr;
    CUDA_OK(cudaStreamEndCapture(s, &g));
    if (g) cudaGraphDestroy(g);
    cudaFree(dev);
    ASSERT_EQ(cfxCudaCommDestroy(cc), cfxSuccess);
  });
}

// A rank killed before the collective: the survivor's stream completes (released with an error
// status) within the timeout, and the error names the dead rank.
TEST(Gpu, KilledRankReleasesTheStream) {
  RunOptions opts;
  opts.expectKilled = {1};
  opts.env = {"CFX_TIMEOUT=10"};
  runRanks(2, [](Rank& rk) {
    cfxCudaComm_t cc = nullptr;
    ASSERT_EQ(cfxCudaCommCreate(rk.comm, 0, &cc), cfxSuccess) << cfxCudaGetLastError(nullptr);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreate(&s));
    const size_t n = size_t{1} << 24;
    float* buf;
    CUDA_OK(cudaMalloc(&buf, n * 4));
    if (rk.rank == 1) raise(SIGKILL);
    ASSERT_EQ(cfxCudaAllReduce(buf, buf, n, cfxFloat32, cfxSum, cc, s), cfxSuccess);
    CUDA_OK(cudaStreamSynchronize(s));  // returns: the chunks were released
    cfxResult_t async = cfxSuccess;
    ASSERT_EQ(cfxCudaCommGetAsyncError(cc, &async), cfxSuccess);
    EXPECT_NE(async, cfxSuccess);
    EXPECT_NE(std::string(cfxCudaGetLastError(cc)).find("rank 1"), std::string::npos) << cfxCudaGetLastError(cc);
  }, opts);
}

int main(int argc, char** argv) {
  if (!isRankProcess()) {
    if (const int presence = cfxGpuPresence(); presence != 0) return presence;  // 77: skipped; 1: CUDA fails
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
