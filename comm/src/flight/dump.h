// Writing flight records out (flight/recorder.h), as JSON and as a few WARN lines that say which
// operation each rank is in and whom it waits for.
//
// A process writes one file, CFX_DEBUG_DUMP_DIR/<hostname>.<pid>.json, holding every live
// communicator of the process, when one of them fails (timeout, abort, remote error, mismatch)
// and when the process gets SIGUSR1 (unless CFX_DUMP_SIGNAL=0 or the application handles SIGUSR1
// itself); a signal's dump does not stop anything. tools/cfx-doctor reads the files of all ranks.
//
// The signal only raises a request (all a handler may safely do); the process's next Conflux
// call, or any of its waits waking from sleep (at least every CFX_LIVENESS_MS), writes the dump
// on its own thread. So a waiting rank dumps at once, and a rank busy outside Conflux at its
// next call; no thread is started for it.
//
// The list of the process's live recorders and the request counters are the one piece of
// process-wide state here: a signal can reach the communicators only through them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flight/recorder.h"

namespace conflux::flight {

// One communicator's record as a JSON object; times are milliseconds before `nowNs`.
std::string toJson(const Recorder& r, int64_t nowNs);
// Where the communicator stands, in a few lines: its last completed collective, then each
// operation not done (state, age, whom it waits for).
std::vector<std::string> summary(const Recorder& r, int64_t nowNs);

// Keeps a recorder in the process's dump list while it lives. The first registration installs
// the SIGUSR1 dump (CFX_DUMP_SIGNAL).
class Registration {
 public:
  explicit Registration(const Recorder* r);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  const Recorder* r_;
};

// `r`'s communicator failed: its summary at WARN, and the process's file.
void dumpOnFailure(const Recorder& r);
// Every live communicator of the process: summaries at WARN, and the file (SIGUSR1).
void dumpProcess(const std::string& why);
// Serves a SIGUSR1 request if one is pending (two relaxed loads when none is).
void dumpIfRequested();

}  // namespace conflux::flight
