#include "exact_coll.h"

#include "communicator.h"
#include "ops/collective.h"
#include "reduce/type_size.h"
#include "vector_coll.h"

namespace conflux {

std::vector<std::vector<std::unique_ptr<Op>>> makeExactAcrossHosts(const Communicator& comm, const CollArgs& a) {
  std::vector<std::vector<std::unique_ptr<Op>>> batches;
  const int n = comm.size(), me = comm.rank();
  const size_t es = reduce::dataTypeSize(a.datatype);
  if (a.coll == Coll::kReduceScatter) {
    std::vector<size_t> offsets(n);
    for (int r = 0; r < n; ++r) offsets[r] = a.count * r;
    batches.push_back(makeVectorCollective(comm, VectorArgs{VectorKind::kReduceScatterv, a.send, a.recv,
                                                            std::vector<size_t>(n, a.count), std::move(offsets),
                                                            std::vector<size_t>(n, a.count), std::vector<size_t>(n, 0),
                                                            a.datatype, a.op}));
    return batches;
  }
  std::vector<size_t> counts(n), offsets(n);
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
  batches.push_back(makeVectorCollective(comm, VectorArgs{VectorKind::kReduceScatterv, a.send, slice, counts, offsets,
                                                          std::vector<size_t>(n, counts[me]), std::vector<size_t>(n, 0),
                                                          a.datatype, a.op, temp}));
  batches.push_back(makeVectorCollective(comm, VectorArgs{VectorKind::kAllGatherv, slice, out,
                                                          std::vector<size_t>(n, counts[me]), std::vector<size_t>(n, 0),
                                                          counts, offsets, a.datatype, cfxSum, temp}));
  return batches;
}

}  // namespace conflux
