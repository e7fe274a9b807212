#include "transport/net/post_queue.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace conflux::net {

PostQueue::PostQueue(int nranks, Encode encode)
    : encode_(encode),
      sendSeq_(static_cast<size_t>(nranks) * kChannels, 0),
      recvSeq_(static_cast<size_t>(nranks) * kChannels, 0) {
  evfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (evfd_ < 0) throwSystemError("eventfd", errno);
}

PostQueue::~PostQueue() { ::close(evfd_); }

RequestPtr PostQueue::post(bool send, int peer, int channel, std::byte* buf, size_t bytes, CallTag tag) {
  auto req = std::make_shared<Request>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t k = static_cast<size_t>(peer) * kChannels + channel;
    const uint64_t seq = encode_(channel, send ? sendSeq_[k]++ : recvSeq_[k]++);
    posts_.push_back(Post{send, peer, buf, bytes, seq, tag, req});
  }
  kick();
  return req;
}

void PostQueue::shutdown(const std::string& why, Status status, uint32_t failedCall) {
  std::unique_lock<std::mutex> lock(mu_);
  if (request_.why.empty()) request_ = ShutdownRequest{why.empty() ? "the communicator failed" : why, status, failedCall};
  lock.unlock();
  kick();
  lock.lock();
  doneCv_.wait(lock, [&] { return shutdownDone_ || stopped_; });
}

void PostQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  kick();
}

bool PostQueue::take(std::deque<Post>& posts, ShutdownRequest& request) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t v;
  [[maybe_unused]] ssize_t r = ::read(evfd_, &v, sizeof(v));
  posts.swap(posts_);
  if (stop_) return false;
  request = request_;
  return true;
}

void PostQueue::shutdownDone() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdownDone_ = true;
  doneCv_.notify_all();
}

void PostQueue::stopped() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  doneCv_.notify_all();
}

void PostQueue::kick() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(evfd_, &one, sizeof(one));
}

}  // namespace conflux::net
