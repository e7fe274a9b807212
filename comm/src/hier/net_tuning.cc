// The inter-host cost model (docs/scaling.md has the derivation):
//   ring: 2 (m-1) alpha + 2 (m-1)/m S / B
//   tree: 2 ceil(log2 m) alpha + 2 ceil(log2 m) (S/2) / B   (two trees, half each, unpipelined)
//   rhd:  2 log2(p) alpha + 2 (p-1)/p S / B  (+ 2 alpha + 2 S / B to fold m - p extra members)
// with alpha the per-message latency of the transport and B the link bandwidth, plus gamma per
// message a rank itself sends or receives (software overhead: 4(m-1) for the ring, at most 12 for
// the two trees, 4 log2(p) (+4) for rhd), which breaks the latency tie between tree and rhd.
#include <cmath>

#include "hier/hier_ops.h"

namespace conflux::hier {

namespace {
constexpr double kAlpha = 40e-6;        // s per message (TCP, measured order of magnitude)
constexpr double kBandwidth = 1.25e9;   // bytes/s (10 Gbit/s)
constexpr double kGamma = 2e-6;         // s per message handled by a rank
}  // namespace

NetAlgo chooseNetAlgo(size_t bytes, int m, const Tuning& t) {
  if (t.net == NetAlgo::kRing || t.net == NetAlgo::kTree || t.net == NetAlgo::kHalvingDoubling) return t.net;
  if (m <= 2) return NetAlgo::kRing;
  const double S = static_cast<double>(bytes), a = kAlpha, B = kBandwidth;
  const double lg = std::ceil(std::log2(m));
  int p = 1;
  while (p * 2 <= m) p *= 2;
  const double g = kGamma;
  const double ring = 2 * (m - 1) * a + 2.0 * (m - 1) / m * S / B + 4 * (m - 1) * g;
  const double tree = 2 * lg * a + 2 * lg * (S / 2) / B + 12 * g;
  double rhd = 2 * std::log2(p) * a + 2.0 * (p - 1) / p * S / B + 4 * std::log2(p) * g;
  if (p != m) rhd += 2 * a + 2 * S / B + 4 * g;
  if (tree < ring && tree < rhd) return NetAlgo::kTree;
  if (rhd < ring) return NetAlgo::kHalvingDoubling;
  return NetAlgo::kRing;
}

}  // namespace conflux::hier
