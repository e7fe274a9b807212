#include "exact_coll.h"

#include <algorithm>

#include "communicator.h"
#include "ops/collective.h"
#include "reduce/type_size.h"
#include "vector_coll.h"

namespace conflux {

std::vector<std::vector<std::unique_ptr<Op>>> makeExactAcrossHosts(const Communicator& comm, const CollArgs& a) {
  std::vector<std::vector<std::unique_ptr<Op>>> batches;
  const int n = comm.size(), me = comm.rank();
  const size_t es = reduce::dataTypeSize(a.datatype);
  // ReduceScatterv's arguments for blocks of `counts` at `offsets`, this rank's into `out`.
  auto reduceScatterv = [&](const std::vector<size_t>& counts, const std::vector<size_t>& offsets, void* out) {
    VectorArgs v(VectorKind::kReduceScatterv, a.send, out, n, a.datatype, a.op);
    std::copy(counts.begin(), counts.end(), v.sendCounts.begin());
    std::copy(offsets.begin(), offsets.end(), v.sendDispls.begin());
    std::fill(v.recvCounts.begin(), v.recvCounts.end(), counts[me]);
    return v;
  };
  std::vector<size_t> counts(n, a.count), offsets(n);
  if (a.coll == Coll::kReduceScatter) {
    for (int r = 0; r < n; ++r) offsets[r] = a.count * r;
    batches.push_back(makeVectorCollective(comm, reduceScatterv(counts, offsets, a.recv)));
    return batches;
  }
  for (int r = 0; r < n; ++r) {
    size_t lo, hi;
    sliceOf(a.count, es, r, n, lo, hi);
    offsets[r] = lo;
    counts[r] = hi - lo;
  }
  std::shared_ptr<ScratchPool::Buffer> temp;
  auto* out = static_cast<std::byte*>(a.recv);
  if (a.coll == Coll::kReduce && me != a.root) {
    temp = comm.scratch().take(a.count * es);
    out = temp->data();
  }
  std::byte* slice = out + offsets[me] * es;
  VectorArgs rs = reduceScatterv(counts, offsets, slice);
  rs.keep = temp;
  batches.push_back(makeVectorCollective(comm, std::move(rs)));
  VectorArgs ag(VectorKind::kAllGatherv, slice, out, n, a.datatype, cfxSum);
  std::fill(ag.sendCounts.begin(), ag.sendCounts.end(), counts[me]);
  std::copy(counts.begin(), counts.end(), ag.recvCounts.begin());
  std::copy(offsets.begin(), offsets.end(), ag.recvDispls.begin());
  ag.keep = temp;
  batches.push_back(makeVectorCollective(comm, std::move(ag)));
  return batches;
}

}  // namespace conflux
