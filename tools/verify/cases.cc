#include "cases.h"

#include <cstring>

namespace cfxtest {

const char* collName(CollKind c) {
  static const char* const k[] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter", "AlltoAll",
                                  "SendRecv", "AlltoAllv"};
  return k[static_cast<int>(c)];
}

bool reduces(CollKind c) {
  return c == CollKind::kAllReduce || c == CollKind::kReduce || c == CollKind::kReduceScatter;
}

namespace {
int prevRank(const CallBuffers& b) { return (b.rank + b.nranks - 1) % b.nranks; }
}  // namespace

void refill(CallBuffers& b, const Pattern& p) {
  const size_t es = p.elemSize();
  const size_t count = b.count;
  uint8_t* rbuf = b.recv.data() + CallBuffers::kGuard;
  std::memset(b.recv.data(), 0xA5, b.recv.size());
  uint8_t* sbuf = b.send.data();
  p.fillInput(b.rank, 0, b.sendElems, sbuf);
  // Broadcast: only the root's input matters; the others start from garbage.
  if (b.coll == CollKind::kBroadcast && b.rank != b.root) std::memset(sbuf, 0x5A, b.sendElems * es);
  b.sendPtr = sbuf;
  b.recvPtr = rbuf;
  if (!b.inPlace) return;
  switch (b.coll) {
    case CollKind::kAllGather:
      std::memcpy(rbuf + b.rank * count * es, sbuf, count * es);
      b.sendPtr = rbuf + b.rank * count * es;
      break;
    case CollKind::kReduceScatter:
      // recvbuff == sendbuff + rank * recvcount.
      b.recvPtr = sbuf + b.rank * count * es;
      break;
    default:
      std::memcpy(rbuf, sbuf, b.sendElems * es);
      b.sendPtr = rbuf;
      break;
  }
}

CallBuffers makeCall(CollKind c, const Pattern& p, int rank, int nranks, int root, size_t count, bool inPlace) {
  CallBuffers b;
  b.coll = c;
  b.count = count;
  b.rank = rank;
  b.nranks = nranks;
  b.root = root;
  b.inPlace = inPlace;
  b.sendElems = b.recvElems = count;
  if (c == CollKind::kAllGather) b.recvElems = count * nranks;
  if (c == CollKind::kReduceScatter) b.sendElems = count * nranks;
  if (c == CollKind::kAlltoAll) b.sendElems = b.recvElems = count * nranks;
  if (c == CollKind::kAlltoAllv) {
    b.sendElems = b.recvElems = 0;
    for (int r = 0; r < nranks; ++r) {
      b.sendDispls.push_back(b.sendElems);
      b.sendCounts.push_back(alltoallvBlock(count, rank, r));
      b.sendElems += b.sendCounts.back();
      b.recvDispls.push_back(b.recvElems);
      b.recvCounts.push_back(alltoallvBlock(count, r, rank));
      b.recvElems += b.recvCounts.back();
    }
  }
  const size_t es = p.elemSize();
  b.recv.resize(b.recvElems * es + 2 * CallBuffers::kGuard);
  b.send.resize(b.sendElems * es + 1);
  refill(b, p);
  return b;
}

size_t verify(const CallBuffers& b, const Pattern& p, std::string& why) {
  const size_t es = p.elemSize();
  const size_t count = b.count;
  const int n = b.nranks, me = b.rank;
  std::vector<uint8_t> want;
  switch (b.coll) {
    case CollKind::kAllReduce:
      want.resize(count * es);
      p.fillExpected(0, count, want.data());
      break;
    case CollKind::kReduce:
      if (me != b.root) return 0;  // non-root receive buffers are not defined
      want.resize(count * es);
      p.fillExpected(0, count, want.data());
      break;
    case CollKind::kBroadcast:
      want.resize(count * es);
      p.fillInput(b.root, 0, count, want.data());
      break;
    case CollKind::kAllGather:
      want.resize(count * n * es);
      for (int r = 0; r < n; ++r) p.fillInput(r, 0, count, want.data() + r * count * es);
      break;
    case CollKind::kReduceScatter:
      want.resize(count * es);
      p.fillExpected(me * count, count, want.data());
      break;
    case CollKind::kAlltoAll:
      want.resize(count * n * es);
      for (int r = 0; r < n; ++r) p.fillInput(r, me * count, count, want.data() + r * count * es);
      break;
    case CollKind::kAlltoAllv:
      want.resize(b.recvElems * es);
      for (int r = 0; r < n; ++r) {
        size_t from = 0;  // where rank r's block for this rank starts in its input
        for (int j = 0; j < me; ++j) from += alltoallvBlock(count, r, j);
        p.fillInput(r, from, b.recvCounts[r], want.data() + b.recvDispls[r] * es);
      }
      break;
    case CollKind::kSendRecv:
      want.resize(count * es);
      p.fillInput(prevRank(b), 0, count, want.data());
      break;
  }
  const auto* out = static_cast<const uint8_t*>(b.recvPtr);
  size_t wrong = 0;
  for (size_t i = 0; i < want.size() / es; ++i) {
    if (std::memcmp(out + i * es, want.data() + i * es, es) != 0) {
      if (wrong++ == 0) why = compare(out, want.data(), want.size() / es, p.type(), "");
    }
  }
  if (!(b.inPlace && b.coll == CollKind::kReduceScatter)) {
    const size_t end = CallBuffers::kGuard + b.recvElems * es;
    for (size_t g = 0; g < CallBuffers::kGuard; ++g) {
      if (b.recv[g] != 0xA5 || b.recv[end + g] != 0xA5) {
        if (wrong++ == 0) why = " wrote outside recvbuff";
        break;
      }
    }
  }
  return wrong;
}

}  // namespace cfxtest
