// The bootstrap root: one detached thread (started by cfxGetUniqueId, or by rank 0 under launchers
// that give only an address) that
//   1. accepts connections and checks each rank's hello (magic, version, secret, bounded length,
//      rank in range, nranks agreed, no duplicate rank); a connection that fails a wire check is
//      dropped with a warning and the job still forms; a job-level error (duplicate rank, nranks
//      mismatch, rank out of range) is sent to every rank that connects;
//   2. once all ranks joined, sends each the address of its parent in the bootstrap tree
//      (bootstrap/tree.h), over which the ranks then gather the rank table and run their barriers
//      and all-gathers: no round trip of them passes through this thread;
//   3. keeps every rank's connection until the rank says goodbye, and tells every rank the first
//      job-level error: a rank that disconnects without goodbye, the bootstrap timeout.
// It owns all of its state and exits on completion, on error, or after the bootstrap timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/unique_id.h"
#include "common/error.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {

// Binds `bindAddr` (port 0: any free port), starts the root thread and returns the bound address.
net::SockAddr startRoot(const net::SockAddr& bindAddr, const Secret& secret, std::chrono::milliseconds timeout);

// A root whose ranks are known processes (cfxCommShrink's survivors): while the job forms, the
// root asks every quarter second why each rank that has not joined yet may never join; an answer
// (for example "(pid 42) exited") fails the job at once, naming that rank, instead of at the
// timeout. `whyGone` runs on the root's thread and must own what it reads.
//
// The roots of successive attempts on one socket share `earlier`: only the latest accepts, and a
// rank that is still joining an attempt that failed hears that attempt's error from the next root,
// rather than "wrong secret". (A rank of the next attempt that an earlier root refused before the
// next one started retries: Client::join's rootListens.)
class FailedAttempts {
 public:
  // A new attempt: its generation, the latest from now on.
  uint64_t begin();
  uint64_t latest() const { return latest_.load(); }
  struct Failure {
    Secret secret;
    Status status;
    std::string error;
  };
  void add(const Secret& secret, Status status, const std::string& error);
  std::optional<Failure> find(const uint8_t* secret) const;

 private:
  std::atomic<uint64_t> latest_{0};
  mutable std::mutex mu_;
  std::vector<Failure> attempts_;
};
struct KnownRanks {
  int nranks = 0;
  std::function<std::string(int rank)> whyGone;
  std::shared_ptr<FailedAttempts> earlier;
};
// How the job error about such a rank ends (a remote error; usage errors are the ranks' own).
inline constexpr const char* kGoneBeforeJoining = " before it joined";
// Serves on `listen`, a socket that already listens (its pending connections are served too).
void startRoot(net::Socket listen, const Secret& secret, std::chrono::milliseconds timeout, KnownRanks known);

}  // namespace conflux::bootstrap
