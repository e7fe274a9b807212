// A communicator's way back to its ranks once its own connections are gone. When a communicator
// forms, each rank opens a listening socket at the address it reached the bootstrap from, and
// every rank learns every other's address; nothing serves the socket until it is needed:
//  - cfxCommShrink starts a bootstrap root on the first survivor's socket (KnownRanks), so the
//    survivors form their communicator without rank 0 (which may be the rank that died);
//  - cfxCommGetFailedRanks asks the socket of each rank on another host whether its process still
//    listens (a refused connection: the process is gone; no answer: its host is unreachable).
// The kernel completes connections to a listening socket by itself, so a live rank that is busy,
// or stopped, still answers; a probe's connection waits in the backlog (4096) until a root serves
// it, and is dropped then.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/root.h"
#include "bootstrap/unique_id.h"
#include "transport/socket/socket.h"

namespace conflux {

class Rendezvous {
 public:
  Rendezvous() = default;
  // Listens at `reachableAt`'s address (any port); `secret` is the communicator's, from which the
  // secrets of the communicators made from it derive.
  Rendezvous(const net::SockAddr& reachableAt, const bootstrap::Secret& secret);

  // This rank's address, for the exchange that tells every rank; then the exchanged addresses
  // (throws Error(kRemoteError) on an address that does not parse).
  std::string address() const { return listener_.valid() ? net::localAddress(listener_).str() : std::string(); }
  void setPeers(const std::vector<std::string>& addresses);
  const net::SockAddr& peer(int rank) const { return peers_.at(rank); }
  const bootstrap::Secret& secret() const { return secret_; }
  // Where this rank is reached (its host address, for the communicators made from this one).
  const net::SockAddr& host() const { return host_; }

  // The secret of a communicator made from this one: the same on every rank that passes the
  // same (kind, number, detail).
  bootstrap::Secret derive(uint64_t kind, uint64_t number, uint64_t detail) const;

  // A bootstrap root on this rank's socket (a duplicate of it: the communicator keeps its own).
  void startRoot(const bootstrap::Secret& secret, std::chrono::milliseconds timeout, bootstrap::KnownRanks known) const;

 private:
  net::Socket listener_;
  net::SockAddr host_;
  bootstrap::Secret secret_{};
  std::vector<net::SockAddr> peers_;
  std::shared_ptr<bootstrap::FailedAttempts> failed_ = std::make_shared<bootstrap::FailedAttempts>();
};

// Which of `addresses` nothing listens at: connections refused, or not completed within
// `timeout` (tried all at once). Returns their indices, ascending (and to `why`, each one's reason).
std::vector<int> unreachable(const std::vector<net::SockAddr>& addresses, std::chrono::milliseconds timeout,
                             std::vector<std::string>* why = nullptr);

}  // namespace conflux
