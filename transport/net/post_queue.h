// The hand-off every network transport shares between the threads that post requests and its one
// progress thread: the queue of posted requests with their sequence numbers, the eventfd that wakes
// the progress thread, and the synchronous shutdown handshake. Each transport keeps only its wire:
// it drains the queue with take(), acts on what it got, and reports back with shutdownDone() and
// stopped() (gloo keeps the same split between its event loop and its per-peer pairs).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "transport/net/transport.h"

namespace conflux::net {

// A request handed from a poster to the progress thread.
struct Post {
  bool send;
  int peer;
  std::byte* buf;
  size_t bytes;
  uint64_t seq;  // the transport's encoding of (channel, the request's number on it)
  CallTag tag;
  RequestPtr req;
};

// A failure the communicator asked the transport to act on (Transport::shutdown).
struct ShutdownRequest {
  std::string why;  // empty: none asked for
  Status status = Status::kRemoteError;
  uint32_t failedCall = 0;
};

class PostQueue {
 public:
  // How a transport packs a channel and the n-th request on it (per peer and direction) into
  // Post::seq, which its wire uses to match a send with its receive.
  using Encode = uint64_t (*)(int channel, uint64_t n);

  PostQueue(int nranks, Encode encode);  // throws kSystemError without an eventfd
  ~PostQueue();
  PostQueue(const PostQueue&) = delete;
  PostQueue& operator=(const PostQueue&) = delete;

  // Readable while posts or a request wait: the progress thread polls it.
  int fd() const { return evfd_; }

  // ---- posters ----
  // Queues a request; `buf` must stay valid until it finishes.
  RequestPtr post(bool send, int peer, int channel, std::byte* buf, size_t bytes, CallTag tag);
  // Asks the progress thread to act on a failure (the first request's reason wins) and returns once
  // it has (shutdownDone) or it has stopped: the thread then holds no pointer into user buffers.
  void shutdown(const std::string& why, Status status, uint32_t failedCall);
  // The owner's destructor, before it joins the progress thread: take() returns false from now on.
  void stop();

  // ---- the progress thread ----
  // Moves the waiting posts into `posts` and copies the shutdown request, if any, into `request`.
  // Returns false once stop() was called.
  bool take(std::deque<Post>& posts, ShutdownRequest& request);
  // The shutdown request was acted on: every pending request failed.
  void shutdownDone();
  // The progress thread's last act: nothing will run any more.
  void stopped();

 private:
  void kick();

  const Encode encode_;
  int evfd_ = -1;
  std::mutex mu_;  // guards the fields below
  std::condition_variable doneCv_;
  std::deque<Post> posts_;
  std::vector<uint64_t> sendSeq_, recvSeq_;  // per (peer, channel)
  ShutdownRequest request_;
  bool stop_ = false;
  bool shutdownDone_ = false;
  bool stopped_ = false;
};

}  // namespace conflux::net
