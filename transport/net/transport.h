// The network transport interface: how ranks on different hosts move bytes. Shared memory has its
// own channels (transport/shm); algorithms reach either through the communicator's links and
// never name a transport.
//
// A transport is a set of connections to peers, addressed by rank, plus one progress thread that
// owns them (epoll for TCP, the UCP worker for UCX). Callers post sends and receives; the progress
// thread completes them and calls `wake` so a sleeping waiter re-checks. Messages between a pair
// of ranks are matched in posting order within a channel: the k-th send from A to B on channel c
// meets the k-th receive that B posted for A on channel c, and their sizes must agree (NCCL's
// rule for send/recv). Channels keep independent streams apart (the two trees of a double
// binary tree, user send/recv beside a collective).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/error.h"

namespace conflux::net {

// One posted send or receive. Shared between the poster and the progress thread.
class Request {
 public:
  enum class State : int { kPending = 0, kDone = 1, kFailed = 2 };

  State state() const { return static_cast<State>(state_.load(std::memory_order_acquire)); }
  bool finished() const { return state() != State::kPending; }
  // Bytes moved so far (progress for the timeout clock).
  uint64_t moved() const { return moved_.load(std::memory_order_relaxed); }
  // Valid once state() == kFailed.
  Status errorStatus() const { return status_; }
  const std::string& errorMessage() const { return message_; }

  // Progress-thread side.
  void addMoved(uint64_t n) { moved_.fetch_add(n, std::memory_order_relaxed); }
  void complete() {
    int pending = static_cast<int>(State::kPending);
    state_.compare_exchange_strong(pending, static_cast<int>(State::kDone), std::memory_order_acq_rel);
  }
  void fail(Status s, std::string m) {
    if (finished()) return;
    status_ = s;
    message_ = std::move(m);
    state_.store(static_cast<int>(State::kFailed), std::memory_order_release);
  }

 private:
  std::atomic<int> state_{0};
  std::atomic<uint64_t> moved_{0};
  Status status_ = Status::kSuccess;
  std::string message_;
};
using RequestPtr = std::shared_ptr<Request>;

// The collective call a message belongs to: `call` packs the call's collective, datatype, op,
// root and count (comm/src/hier/call_tag.h), `seq` is its number among the communicator's
// collective calls, the same on every rank. Messages carry the sender's tag and receives the
// receiver's, so ranks that called different collectives are told so instead of exchanging the
// wrong data or waiting for each other. `call` 0: not checked (user Send/Recv).
struct CallTag {
  uint64_t call = 0;
  uint32_t seq = 0;
  bool operator==(const CallTag&) const = default;
  // Both sides are checked, and they name different calls.
  bool differsFrom(const CallTag& o) const { return call != 0 && o.call != 0 && !(*this == o); }
};

// Everything a transport needs from the communicator that creates it.
struct TransportSetup {
  int rank = 0;
  int nranks = 0;
  std::vector<int> peers;   // the ranks to connect to (never `rank`)
  uint64_t commHash = 0;    // handshakes carry it, so stray connections are refused
  std::chrono::milliseconds connectTimeout{120000};
  // All-gather of fixed-size address blobs over the bootstrap (or the parent communicator):
  // takes this rank's blob, returns every rank's, indexed by rank.
  std::function<std::vector<std::string>(const std::string&)> exchange;
  // Called by the progress thread after it completed or failed requests.
  std::function<void()> wake;
  // Describes a rank for messages ("rank 3 (host b, pid 42)").
  std::function<std::string(int)> describeRank;
  // Describes a call tag for messages ("call #12 (AllReduce count 7 float32 sum)").
  std::function<std::string(const CallTag&)> describeCall;
  // The NIC the topology plan chose for this rank (topology/plan.h), or empty: TCP uses that
  // interface when CFX_SOCKET_IFNAME selects it; UCX restricts itself to that RDMA device (port 1)
  // unless UCX_NET_DEVICES is set.
  std::string nic;
  bool nicIsRdma = false;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Posts a message; `buf` must stay valid until the request finishes. A request to a peer whose
  // connection was lost fails at once with kRemoteError; a receive whose message carries a
  // different call tag fails with kInvalidUsage, and the sender hears why.
  virtual RequestPtr postSend(int peer, int channel, const void* buf, size_t bytes, CallTag tag) = 0;
  virtual RequestPtr postRecv(int peer, int channel, void* buf, size_t bytes, CallTag tag) = 0;
  // A message that arrived for no posted receive yet but belongs to another call with the same
  // number as `mine` (the sender called a different collective), or to an earlier call, which this
  // rank finished without expecting it (the sender's call of that number was another one): why, in
  // words; else empty.
  // Transports that cannot see arrivals before they are received return empty.
  // `oldestOpen`: the lowest call number the rank has not finished (0: unknown: `mine`'s).
  virtual std::string crossedCall(const CallTag& /*mine*/, uint32_t /*oldestOpen*/) const { return {}; }
  // Fails every pending request with `why` and closes all connections, so the peers see the loss
  // at once instead of waiting for their timeout. Idempotent; called when the communicator fails.
  // `status` is the failure's (a mismatch is kInvalidUsage on every rank); `failedCall` the
  // collective call it happened in (CallTag::seq; 0: unknown, or not a collective). A peer told of
  // it still completes the calls before `failedCall` whose data this rank had sent (it reads until
  // the connection ends), and fails the rest at once: the failure is that call's, not an earlier
  // one's (TCP; UCX fails everything at once).
  virtual void shutdown(const std::string& why, Status status = Status::kRemoteError, uint32_t failedCall = 0) = 0;
};

inline constexpr int kChannels = 4;
inline constexpr int kCollChannel = 0;  // collectives (and the first tree)
inline constexpr int kTreeChannel = 1;  // the second tree of a double binary tree
inline constexpr int kP2pChannel = 2;   // user send/recv

// The largest address blob exchanged at set-up.
inline constexpr size_t kMaxAddressBytes = 2048;

}  // namespace conflux::net
