// A rank's links in the bootstrap tree (patterns/kary_tree.h: k-ary, heap order, rank 0 on top),
// and the rounds run over it once the root placed every rank: each round gathers the ranks'
// statuses (and blobs) up to rank 0 and sends the outcome (and every blob) back down. No rank
// handles more than k+1 links or more than k+1 messages a round, so a barrier or an all-gather of
// n ranks takes about 2 log_k(n) hops rather than n round trips at one process.
//
// While it waits on a link a rank also watches the root's connection: the root speaks only to tell
// a job-level error (a rank died, the bootstrap timed out), and then every rank reports that.
// A link that breaks is named ("rank 5 (pid 4711) disconnected during initialisation") unless the
// root's word on it comes within a grace period.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "outcome.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {

// The root's connection, watched while waiting: `spoke` runs when it is readable, and throws.
struct RootWatch {
  int fd = -1;
  std::function<void()> spoke;
};

class Tree {
 public:
  using Clock = std::chrono::steady_clock;

  Tree() = default;
  Tree(const Secret& secret, int nranks, int rank, Clock::time_point deadline)
      : secret_(secret), nranks_(nranks), rank_(rank), deadline_(deadline) {}

  // Connects to the parent at `parent` ("host:port", empty for rank 0) and accepts this rank's
  // children on `listener`, dropping (with a warning) connections that are not one of them.
  void connect(net::Socket listener, const std::string& parent, const RootWatch& root);
  // One round: this rank's outcome and, for an all-gather, its blob (`blob` null for a barrier on
  // every rank). Returns the round's outcome (the failure of the lowest failed rank, or success)
  // and every rank's blob in rank order.
  TreeDown round(const Outcome& mine, const std::string* blob, const RootWatch& root);
  // Names ranks by pid in the messages from now on.
  void setPids(std::vector<int32_t> pids) { pids_ = std::move(pids); }
  void close();

 private:
  struct Link {
    int rank = -1;
    net::Socket sock;
  };
  // Waits until `fd` is readable (or `until` passes: false), watching the root meanwhile. Once the
  // root spoke, `fd` has a grace period to deliver what it was sending; then the root's error is
  // thrown (and from then on, at every wait that would fail).
  bool waitReadable(int fd, Clock::time_point until, const RootWatch& root);
  std::vector<uint8_t> read(Link& link, MsgType expected, const RootWatch& root);
  void send(Link& link, MsgType type, const std::vector<uint8_t>& payload, const RootWatch& root);
  // `link` broke (`why`): throws the root's word on it if it comes within the grace period, else
  // an error naming the rank.
  [[noreturn]] void lost(const Link& link, const std::string& why, const RootWatch& root);
  // Accepts one connection on `listener`; returns it if it shows the secret and names one of
  // `expected` not yet taken (erased from it), else drops it and returns an empty link.
  Link acceptChild(const net::Socket& listener, std::vector<int>& expected);
  std::string who(int rank) const;

  Secret secret_{};
  int nranks_ = 0;
  int rank_ = -1;
  Clock::time_point deadline_{};
  Link parent_;
  std::vector<Link> children_;
  std::vector<int32_t> pids_;
  std::exception_ptr rootError_;  // what the root said, once it spoke
  Clock::time_point graceUntil_{};  // then: when every wait ends, delivered or not
};

}  // namespace conflux::bootstrap
