#include "ops/handoff_stores.h"

#include <cstdio>
#include <string>

#include "common/log.h"
#include "ops/size_classes.h"

namespace conflux {

int HandoffStores::sizeClass(size_t bytes) { return conflux::sizeClass(bytes, kMinBytes, kSizeClasses); }

HandoffStores::Pick HandoffStores::next(size_t bytes) {
  if (bytes < kMinBytes) return {};
  if (forced_ != Mode::kAuto) return {forced_ == Mode::kStreaming, false};
  Trial& t = trials_[sizeClass(bytes)];
  const uint64_t step = t.calls++ % kRetrialCalls;
  if (step == 0) {  // a trial starts
    t.rate[0] = t.rate[1] = 0.0;
    return {true, true};
  }
  if (step == 1) return {false, true};
  return {t.streaming, false};
}

void HandoffStores::record(size_t bytes, bool streaming, int64_t ns) {
  Trial& t = trials_[sizeClass(bytes)];
  t.rate[streaming] = static_cast<double>(bytes) / static_cast<double>(ns > 0 ? ns : 1);
  if (t.rate[0] == 0.0 || t.rate[1] == 0.0) return;
  const bool verdict = t.rate[1] >= kSpellMargin * t.rate[0];
  const bool changed = !t.decided || verdict != t.streaming;
  t.streaming = verdict;
  t.decided = true;
  if (!changed) return;
  const std::string range = sizeClassRange(static_cast<int>(&t - trials_), kMinBytes, kSizeClasses);
  char line[240];
  std::snprintf(line, sizeof line,
                "staged reductions' hand-offs, calls %s per rank: streaming stores %.2f GB/s, ordinary %.2f: %s "
                "(tried again every %llu calls)",
                range.c_str(), t.rate[1], t.rate[0], verdict ? "streaming" : "ordinary",
                static_cast<unsigned long long>(kRetrialCalls));
  logInfo(line);
}

HandoffStores::Mode HandoffStores::mode(size_t bytes) const {
  if (bytes < kMinBytes) return Mode::kOrdinary;
  if (forced_ != Mode::kAuto) return forced_;
  return trials_[sizeClass(bytes)].streaming ? Mode::kStreaming : Mode::kOrdinary;
}

}  // namespace conflux
