// VectorArgs (comm/src/vector_coll.h) keeps its four arrays in the object up to kInlineRanks ranks
// and in one allocation beyond: a move, either way, carries every count and displacement, and
// leaves the spans pointing into the new object's storage, not the old one's.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>

#include "vector_coll.h"

namespace conflux {
namespace {

void fill(VectorArgs& a, size_t base) {
  for (size_t r = 0; r < a.sendCounts.size(); ++r) {
    a.sendCounts[r] = base + r;
    a.sendDispls[r] = base + 100 + r;
    a.recvCounts[r] = base + 200 + r;
    a.recvDispls[r] = base + 300 + r;
  }
}

void expectFilled(const VectorArgs& a, size_t n, size_t base, const char* what) {
  ASSERT_EQ(a.sendCounts.size(), n) << what;
  ASSERT_EQ(a.recvDispls.size(), n) << what;
  for (size_t r = 0; r < n; ++r) {
    EXPECT_EQ(a.sendCounts[r], base + r) << what << " rank " << r;
    EXPECT_EQ(a.sendDispls[r], base + 100 + r) << what << " rank " << r;
    EXPECT_EQ(a.recvCounts[r], base + 200 + r) << what << " rank " << r;
    EXPECT_EQ(a.recvDispls[r], base + 300 + r) << what << " rank " << r;
  }
}

// Whether the spans lie inside the object itself (its inline arrays).
bool inside(const VectorArgs& a) {
  const auto* lo = reinterpret_cast<const std::byte*>(&a);
  const auto* p = reinterpret_cast<const std::byte*>(a.sendCounts.data());
  const auto* q = reinterpret_cast<const std::byte*>(a.recvDispls.data() + a.recvDispls.size());
  return p >= lo && q <= lo + sizeof(VectorArgs);
}

TEST(VectorArgs, MovesCarryEveryArrayInlineOrOnTheHeap) {
  for (size_t n : {size_t{1}, size_t{3}, VectorArgs::kInlineRanks, VectorArgs::kInlineRanks + 1, size_t{63}}) {
    const bool inl = n <= VectorArgs::kInlineRanks;
    auto a =
        std::make_unique<VectorArgs>(VectorKind::kAlltoAllv, nullptr, nullptr, static_cast<int>(n), cfxInt8, cfxSum);
    for (size_t r = 0; r < n; ++r) ASSERT_EQ(a->sendCounts[r] + a->recvDispls[r], 0u) << "not zeroed, n " << n;
    EXPECT_EQ(inside(*a), inl) << "n " << n;
    fill(*a, 10);
    auto b = std::make_unique<VectorArgs>(std::move(*a));
    a.reset();  // the old object's storage is gone: b must not point into it
    expectFilled(*b, n, 10, "moved");
    EXPECT_EQ(inside(*b), inl) << "n " << n;
    VectorArgs c(VectorKind::kAllGatherv, nullptr, nullptr, 2, cfxInt8, cfxSum);
    c = std::move(*b);
    b.reset();
    expectFilled(c, n, 10, "move-assigned");
    EXPECT_EQ(inside(c), inl) << "n " << n;
    EXPECT_EQ(c.kind, VectorKind::kAlltoAllv);
  }
}

}  // namespace
}  // namespace conflux
