#include "ops/copy.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/error.h"
#include "common/log.h"
#include "ops/size_classes.h"
#include "reduce/stream_lines.h"

namespace conflux {

void copyOut(void* dst, const void* src, size_t bytes, bool streaming) {
  if (bytes == 0) return;  // an empty buffer's pointer may be null, which memcpy may not be given
  if (!streaming || bytes < 256) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  // Head up to a line boundary of the destination, whole lines, then the tail.
  const size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  std::memcpy(d, s, head);
  d += head;
  s += head;
  bytes -= head;
  const size_t body = bytes & ~size_t{63};
  reduce::streamLines(d, s, body);
  std::memcpy(d + body, s + body, bytes - body);
  _mm_sfence();  // streaming stores are weakly ordered: publish them before any flag that follows
}

StoreChooser::Mode StoreChooser::modeFromEnv() {
  const std::string v = env::getString("CFX_STREAMING_STORES");
  if (v == "auto") return Mode::kAuto;
  if (v == "1") return Mode::kStreaming;
  if (v == "0") return Mode::kOrdinary;
  throw Error(Status::kInvalidArgument, "CFX_STREAMING_STORES must be auto, 1 or 0 (got '" + v + "')");
}

int StoreChooser::sizeClass(size_t messageBytes) {
  return conflux::sizeClass(messageBytes, kStreamingMinBytes, kSizeClasses);
}

void StoreChooser::copyToSlot(void* slot, const void* src, size_t bytes, size_t stagedBytes) const {
  copyOut(slot, src, bytes, stagedBytes >= kStagingStreamingMinBytes && trials_[0].mode != Mode::kOrdinary);
}

void StoreChooser::copy(void* dst, const void* src, size_t bytes, size_t messageBytes, uint64_t message) {
  const Mode chosen = mode(messageBytes);
  if (messageBytes < kStreamingMinBytes || chosen != Mode::kAuto) {
    copyOut(dst, src, bytes, chosen == Mode::kStreaming && messageBytes >= kStreamingMinBytes);
    return;
  }
  if (sizeClass(messageBytes) == 0) {  // timed by the piece
    if (bytes < kTimedMinBytes) {
      copyOut(dst, src, bytes, false);
      return;
    }
    auto* d = static_cast<std::byte*>(dst);
    const auto* s = static_cast<const std::byte*>(src);
    for (size_t done = 0; done < bytes;) {
      const size_t n = std::min(kTrialPieceBytes, bytes - done);
      run(n, messageBytes, [&](bool streaming) { copyOut(d + done, s + done, n, streaming); });
      done += n;
    }
    return;
  }
  if (message < current_.id) {  // an older operation still copying: it disturbs the current sample
    current_.timed = false;
    copyOut(dst, src, bytes, false);
    return;
  }
  if (message != current_.id) startMessage(message, messageBytes);
  copyOut(dst, src, bytes, current_.streaming);
  current_.bytes += bytes;
  current_.end = wallNs();
}

void StoreChooser::startMessage(uint64_t id, size_t messageBytes) {
  Trial& last = trials_[current_.sizeClass];
  if (current_.timed && current_.bytes > 0 && last.mode == Mode::kAuto) {
    record(last, current_.streaming, current_.bytes, current_.end - current_.start);
  }
  const int c = sizeClass(messageBytes);
  Trial& t = trials_[c];
  current_ = Message{id, c, false, false, 0, wallNs(), 0};
  if (t.mode != Mode::kAuto) {  // decided by the message that just ended
    current_.streaming = t.mode == Mode::kStreaming;
    return;
  }
  if (!t.warm) {
    t.warm = true;  // the first message of its class: streaming stores, untimed; ordinary next
    current_.streaming = true;
    t.nextStreaming = false;
    return;
  }
  current_.timed = true;
  current_.streaming = t.nextStreaming;
  t.nextStreaming = !t.nextStreaming;
}

int64_t StoreChooser::wallNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t StoreChooser::threadNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}
}  // namespace

StoreChooser::Mode StoreChooser::decide(const std::vector<double>& ordinary, const std::vector<double>& streaming,
                                        uint64_t ordinaryBytes, uint64_t streamingBytes) {
  const size_t fewest = std::min(ordinary.size(), streaming.size());
  if (fewest == 0 || ordinaryBytes < kTrialBytes || streamingBytes < kTrialBytes) return Mode::kAuto;
  const double fast = median(streaming), plain = median(ordinary);
  const bool decisive = fast >= kDecisiveMargin * plain || plain >= kDecisiveMargin * fast;
  if (fewest < kTrialSamples && !decisive) return Mode::kAuto;
  return fast >= kStreamingMargin * plain ? Mode::kStreaming : Mode::kOrdinary;
}

void StoreChooser::record(Trial& t, bool streaming, size_t bytes, int64_t ns) {
  t.bytes[streaming] += bytes;
  t.rates[streaming].push_back(static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(ns, 1)));
  t.mode = decide(t.rates[0], t.rates[1], t.bytes[0], t.bytes[1]);
  if (t.mode != Mode::kAuto) {
    const double fast = median(t.rates[1]), plain = median(t.rates[0]);
    const std::string range = sizeClassRange(static_cast<int>(&t - trials_), kStreamingMinBytes, kSizeClasses);
    char line[240];
    std::snprintf(line, sizeof line,
                  "%s, messages %s: streaming stores %.2f GB/s (%zu samples), ordinary %.2f (%zu): %s", what_,
                  range.c_str(), fast, t.rates[1].size(), plain, t.rates[0].size(),
                  t.mode == Mode::kStreaming ? "streaming" : "ordinary");
    logInfo(line);
  }
}

double StoreChooser::rate(bool streaming, size_t messageBytes) const {
  return median(trials_[sizeClass(messageBytes)].rates[streaming]);
}

}  // namespace conflux
