// A rank's side of the bootstrap: join the root, which places the rank in the bootstrap tree
// (bootstrap/tree.h); learn every rank's pid and host over the tree, and run barriers that carry a
// status (so one rank's failure during set-up reaches all of them) and all-gathers over it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "bootstrap/tree.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "outcome.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {

class Client {
 public:
  // Connects and sends this rank's hello; returns once all ranks joined. Throws Error with the
  // root's message on a job-level error (kInvalidUsage) or on timeout.
  // `rootListens`: the root's socket listens already (cfxCommShrink), so a refused connection
  // means its process is gone and fails at once, while a root that refuses this rank's secret is
  // an earlier attempt's, still serving the socket: the rank tries again until the timeout.
  static Client join(const UniqueIdData& id, int nranks, int rank, std::chrono::milliseconds timeout,
                     bool rootListens = false);

  const std::vector<PeerInfo>& peers() const { return peers_; }
  // The address this rank reached the root from: one the other ranks can reach it at.
  net::SockAddr localAddress() const { return local_; }
  // Enters a barrier with this rank's outcome; returns the first failure of any rank (or success).
  Outcome barrier(const Outcome& mine);
  // All-gather of one blob per rank (at most kMaxExchangeBytes), returned in rank order.
  std::vector<std::string> exchange(const std::string& mine);
  // Tells the root this rank finished initialisation, then disconnects.
  void finish();

 private:
  // Reads the root's next frame (a job-level error throws its message).
  std::vector<uint8_t> readFrame(MsgType expected);
  // The root's connection, watched while the tree waits (valid while this Client does not move).
  RootWatch watch();

  net::Socket sock_;
  std::string root_;  // its address, for messages
  Secret secret_{};
  int rank_ = -1;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<PeerInfo> peers_;
  net::SockAddr local_;
  bool refused_ = false;  // the root refused this rank's secret
  Tree tree_;
};

}  // namespace conflux::bootstrap
