#include "exact_cases.h"

#include <cstring>
#include <vector>

#include "exact_reference.h"

namespace cfxtest {
namespace {

enum class X { kAllReduce, kReduce, kReduceScatter, kReduceScatterv };
const char* name(X c) {
  switch (c) {
    case X::kAllReduce: return "AllReduce";
    case X::kReduce: return "Reduce";
    case X::kReduceScatter: return "ReduceScatter";
    default: return "ReduceScatterv";
  }
}

constexpr cfxDataType_t kFloatTypes[] = {cfxFloat64, cfxFloat32, cfxFloat16, cfxBfloat16, cfxFloat8e4m3, cfxFloat8e5m2};

uint64_t load(const std::vector<uint8_t>& buf, size_t es, size_t i) {
  uint64_t v = 0;
  std::memcpy(&v, buf.data() + i * es, es);
  return v;
}

// The reference costs tens of microseconds an element (more under ASan): small outputs are checked
// whole, larger ones every 13th element (13 is prime to the 16 patterns of hurtfulInput, so every
// pattern is met) and at both ends, the largest every 509th.
bool sampled(size_t i, size_t count) {
  if (count <= 64 || i < 16 || i + 16 >= count) return true;
  return i % (count > 4096 ? 509 : 13) == 0;
}

// Element `i` of the reduced vector (length `total`): the reference over every rank's input.
uint64_t expected(cfxDataType_t type, int n, size_t i, bool avg) {
  std::vector<uint64_t> xs(n);
  for (int r = 0; r < n; ++r) xs[r] = hurtfulInput(type, n, r, i);
  return exactReference(type, xs, avg);
}

std::string runOne(Rank& rk, X c, cfxDataType_t type, cfxRedOp_t op, bool avg, size_t count, bool inPlace) {
  const int n = rk.nranks, me = rk.rank;
  const size_t es = elementSize(type);
  // ReduceScatterv's counts: uneven, with a zero, the same on every rank.
  std::vector<size_t> counts(n), offsets(n);
  size_t total = count;
  if (c == X::kReduceScatter) total = count * n;
  if (c == X::kReduceScatterv) {
    total = 0;
    for (int r = 0; r < n; ++r) {
      counts[r] = r == 1 ? 0 : count + 3 * r;
      offsets[r] = total;
      total += counts[r];
    }
  }
  std::vector<uint8_t> send(total * es);
  for (size_t i = 0; i < total; ++i) {
    const uint64_t v = hurtfulInput(type, n, me, i);
    std::memcpy(send.data() + i * es, &v, es);
  }
  const int root = n - 1;
  size_t outLo = 0, outCount = total;  // the part of the reduced vector this rank holds
  if (c == X::kReduceScatter) outLo = count * me, outCount = count;
  if (c == X::kReduceScatterv) outLo = offsets[me], outCount = counts[me];
  std::vector<uint8_t> recv(c == X::kReduceScatter || c == X::kReduceScatterv ? outCount * es : total * es, 0xab);
  std::vector<uint8_t>& buf = inPlace ? send : recv;
  void* out = inPlace ? send.data() + (c == X::kAllReduce || c == X::kReduce ? 0 : outLo * es) : recv.data();
  cfxResult_t r = cfxSuccess;
  switch (c) {
    case X::kAllReduce: r = cfxAllReduce(send.data(), out, count, type, op, rk.comm, nullptr); break;
    case X::kReduce: r = cfxReduce(send.data(), out, count, type, op, root, rk.comm, nullptr); break;
    case X::kReduceScatter: r = cfxReduceScatter(send.data(), out, count, type, op, rk.comm, nullptr); break;
    case X::kReduceScatterv: r = cfxReduceScatterv(send.data(), out, counts.data(), type, op, rk.comm, nullptr); break;
  }
  const std::string what = std::string(name(c)) + " type " + std::to_string(type) + (avg ? " avg" : " sum") +
                           " count " + std::to_string(count) + (inPlace ? " in place" : "") + " at " +
                           std::to_string(n) + " ranks";
  if (r != cfxSuccess) return what + ": " + cfxGetLastError(rk.comm);
  if (c == X::kReduce && me != root) return "";
  const size_t base = inPlace && (c == X::kReduceScatter || c == X::kReduceScatterv) ? outLo : 0;
  for (size_t i = 0; i < outCount; ++i) {
    if (!sampled(i, outCount)) continue;
    const uint64_t want = expected(type, n, outLo + i, avg), got = load(buf, es, base + i);
    if (got != want) {
      return what + ": element " + std::to_string(outLo + i) + " is " + std::to_string(got) + ", the correctly rounded " +
             std::to_string(want);
    }
  }
  return "";
}

}  // namespace

std::string exactMatrix(Rank& rk, cfxRedOp_t sumOp, cfxRedOp_t avgOp) {
  for (X c : {X::kAllReduce, X::kReduce, X::kReduceScatter, X::kReduceScatterv}) {
    for (cfxDataType_t type : kFloatTypes) {
      for (bool avg : {false, true}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{37}, size_t{1001}}) {
          for (bool inPlace : {false, true}) {
            if (std::string e = runOne(rk, c, type, avg ? avgOp : sumOp, avg, count, inPlace); !e.empty()) return e;
          }
        }
      }
    }
  }
  // Large, beyond one chunk of the shared-memory algorithms (sampled).
  for (cfxDataType_t type : {cfxFloat32, cfxBfloat16, cfxFloat64}) {
    for (bool inPlace : {false, true}) {
      if (std::string e = runOne(rk, X::kAllReduce, type, sumOp, false, (size_t{1} << 19) + 5, inPlace); !e.empty()) return e;
    }
  }
  return "";
}

std::string exactAllReduceCases(Rank& rk, cfxRedOp_t sumOp, cfxRedOp_t avgOp) {
  for (cfxDataType_t type : {cfxFloat32, cfxBfloat16, cfxFloat16}) {
    for (bool avg : {false, true}) {
      for (size_t count : {size_t{1}, size_t{37}, size_t{1001}, (size_t{1} << 17) + 1}) {
        const cfxRedOp_t op = avg ? avgOp : sumOp;
        if (std::string e = runOne(rk, X::kAllReduce, type, op, avg, count, count % 2 == 1); !e.empty()) return e;
      }
    }
  }
  return "";
}

}  // namespace cfxtest
