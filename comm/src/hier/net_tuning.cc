// The inter-host cost model (docs/scaling.md has the derivation):
//   ring: 2 (m-1) alpha + 2 (m-1)/m S / B
//   tree: 2 ceil(log2 m) alpha + 2 ceil(log2 m) (S/2) / B   (two trees, half each, unpipelined)
//   rhd:  2 log2(p) alpha + 2 (p-1)/p S / B  (+ 2 alpha + 2 S / B to fold m - p extra members)
// with alpha the per-message latency of the transport and B the link bandwidth, plus gamma per
// message a rank itself sends or receives (software overhead: 4(m-1) for the ring, at most 12 for
// the two trees, 4 log2(p) (+4) for rhd), which breaks the latency tie between tree and rhd.
// The ring is the default: another algorithm runs only where the model predicts it at least 10%
// faster, more than the model's error. Where they are closer, the ring's two steadily streaming
// connections did better on TCP than halving-doubling's bursts to a new partner each step (8
// namespace hosts at 4 to 64 MiB: rhd, predicted 0.3-5.5% faster, took 1.05-1.26x the ring's time
// with cubic TCP and 1.4-1.7x with bbr; docs/scaling.md).
#include <algorithm>
#include <cmath>

#include "common/arith.h"
#include "hier/hier_ops.h"

namespace conflux::hier {

namespace {
constexpr double kAlpha = 40e-6;        // s per message (TCP, measured order of magnitude)
constexpr double kBandwidth = 1.25e9;   // bytes/s (10 Gbit/s)
constexpr double kGamma = 2e-6;         // s per message handled by a rank
constexpr double kRingPreference = 0.9; // another algorithm must take at most this share of the ring's time
}  // namespace

NetAlgo chooseNetAlgo(size_t bytes, int m, const Tuning& t) {
  if (t.net == NetAlgo::kRing || t.net == NetAlgo::kTree || t.net == NetAlgo::kHalvingDoubling) return t.net;
  if (m <= 2) return NetAlgo::kRing;
  const double S = static_cast<double>(bytes), a = kAlpha, B = kBandwidth;
  const double lg = std::ceil(std::log2(m));
  const int p = largestPowerOfTwo(m);
  const double g = kGamma;
  const double ring = 2 * (m - 1) * a + 2.0 * (m - 1) / m * S / B + 4 * (m - 1) * g;
  const double tree = 2 * lg * a + 2 * lg * (S / 2) / B + 12 * g;
  double rhd = 2 * std::log2(p) * a + 2.0 * (p - 1) / p * S / B + 4 * std::log2(p) * g;
  if (p != m) rhd += 2 * a + 2 * S / B + 4 * g;
  if (std::min(tree, rhd) > kRingPreference * ring) return NetAlgo::kRing;
  return tree < rhd ? NetAlgo::kTree : NetAlgo::kHalvingDoubling;
}

}  // namespace conflux::hier
