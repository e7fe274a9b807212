#include "stream.h"

namespace conflux {

bool Stream::valid(const void* p) { return p != nullptr && static_cast<const Stream*>(p)->magic_ == kMagic; }

void Stream::enqueued() {
  std::lock_guard<std::mutex> lock(mu_);
  ++pending_;
}

void Stream::completed(const Outcome& o) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!o.ok() && error_.ok()) error_ = o;
  if (--pending_ == 0) cv_.notify_all();
}

Outcome Stream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return pending_ == 0; });
  Outcome e = error_;
  error_ = Outcome{};
  return e;
}

Outcome Stream::query() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_ > 0) return Outcome{Status::kInProgress, "operations are still running"};
  Outcome e = error_;
  error_ = Outcome{};
  return e;
}

}  // namespace conflux
