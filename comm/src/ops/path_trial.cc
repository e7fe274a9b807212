#include "ops/path_trial.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "ops/size_classes.h"

namespace conflux {

namespace {
double best(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); }
const char* pathName(PathTrial::Mode m) { return m == PathTrial::Mode::kSingleCopy ? "single copy" : "staged"; }
}  // namespace

int PathTrial::sizeClass(size_t bytes) { return conflux::sizeClass(bytes, kMinBytes, kSizeClasses); }

PathTrial::Mode PathTrial::decide(const std::vector<double>& staged, const std::vector<double>& single) {
  if (staged.empty() || single.empty()) return Mode::kAuto;
  const double s = best(staged), c = best(single);
  const bool decisive = s >= kDecisiveMargin * c || c >= kDecisiveMargin * s;
  if (!decisive && std::min(staged.size(), single.size()) < kSamples) return Mode::kAuto;
  return s >= kStagedMargin * c ? Mode::kStaged : Mode::kSingleCopy;
}

PathTrial::Mode PathTrial::modeFromEnv() {
  const std::string v = env::getString("CFX_GATHER_PATH");
  if (v.empty() || v == "auto") return Mode::kAuto;
  if (v == "staged") return Mode::kStaged;
  if (v == "single") return Mode::kSingleCopy;
  throw Error(Status::kInvalidArgument, "CFX_GATHER_PATH must be auto, staged or single (got '" + v + "')");
}

PathTrial::Pick PathTrial::next(size_t bytes) {
  Trial& t = trials_[sizeClass(bytes)];
  if (t.mode != Mode::kAuto) {
    return {t.mode == Mode::kSingleCopy ? GatherPath::kSingleCopy : GatherPath::kStaged, false};
  }
  if (t.warmCalls < kWarmCalls) {
    ++t.warmCalls;
    return {GatherPath::kSingleCopy, false};
  }
  return {t.rates[0].size() <= t.rates[1].size() ? GatherPath::kStaged : GatherPath::kSingleCopy, true};
}

void PathTrial::record(size_t bytes, GatherPath path, int64_t ns) {
  Trial& t = trials_[sizeClass(bytes)];
  if (t.mode != Mode::kAuto) return;
  t.rates[static_cast<int>(path)].push_back(static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(ns, 1)));
  t.mode = decide(t.rates[0], t.rates[1]);
  if (t.mode == Mode::kAuto) return;
  const std::string range = sizeClassRange(sizeClass(bytes), kMinBytes, kSizeClasses);
  char line[240];
  std::snprintf(line, sizeof line,
                "large AllGather and Broadcast, %s of output: staged %.2f GB/s (%zu calls), single copy %.2f (%zu): %s",
                range.c_str(), best(t.rates[0]), t.rates[0].size(), best(t.rates[1]), t.rates[1].size(),
                pathName(t.mode));
  logInfo(line);
}

}  // namespace conflux
