// The size classes of the trials that choose per message size (ops/copy.h's StoreChooser,
// ops/path_trial.h, ops/handoff_stores.h): class 0 from `first` bytes, each class 4x the last, the
// last with no end. A choice made on one class need not hold on the next (what fits the caches
// at 16 MiB does not at 256).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace conflux {

// The class of `bytes` (>= first) among `classes`.
constexpr int sizeClass(size_t bytes, size_t first, int classes) {
  int c = 0;
  for (size_t end = 4 * first; c + 1 < classes && bytes >= end; end *= 4) ++c;
  return c;
}

// Class `c` in words, for a trial's log line: "from 16 MiB to 64 MiB", or "from 256 MiB" for the last.
inline std::string sizeClassRange(int c, size_t first, int classes) {
  const size_t from = (first >> 20) << (2 * c);
  char words[64];
  if (c + 1 < classes) {
    std::snprintf(words, sizeof words, "from %zu MiB to %zu MiB", from, 4 * from);
  } else {
    std::snprintf(words, sizeof words, "from %zu MiB", from);
  }
  return words;
}

}  // namespace conflux
