// One job of the fault campaign, derived from its seed alone, so the driver and every rank agree
// on it without talking, and a failing seed reproduces the job exactly.
//
// A job is 1-4 ranks on this host, or, when the driver runs inside tests/netns/hosts.sh, a third
// of the jobs 2 namespace hosts x 1-2 ranks, running a loop of random steps (collective, count,
// datatype, op, root, on a stream or not, inside a group or not) with at most one fault: a rank
// killed, stopped, calling a different count or collective, exiting without destroying its communicator,
// aborting it from another thread, or (across hosts) setting its host's link down, at a random
// step; or shared memory too small for the job at init (a 1 MiB tmpfs as CFX_SHM_DIR, which needs
// root: without it that job runs clean). The layout is drawn apart from the rest, so a one-host
// job is the same whether namespace hosts are there or not. After a rank is killed or exits, the
// survivors also recover (shrinks()): they ask cfxCommGetFailedRanks who is gone, shrink without
// it (CFX_SHRINK_ABORT) and check the new communicator exactly.
#pragma once

#include <cstdint>
#include <string>

namespace cfxcampaign {

enum class Fault { kNone, kKill, kStop, kMismatch, kExit, kAbort, kShmFull, kLinkDown, kMismatchColl };
const char* faultName(Fault f);

enum class Coll { kAllReduce, kReduce, kBroadcast, kAllGather, kReduceScatter, kAlltoAll, kSendRecv };
const char* collName(Coll c);

struct Step {
  Coll coll;
  size_t count;   // per rank where the collective has per-rank blocks
  int dtype;      // cfxDataType_t: int32, int64, float32 or float64
  int op;         // cfxRedOp_t: sum, max or min
  int root;
  bool stream;
  bool group;
};

struct Job {
  uint64_t seed;
  int nranks;
  int hosts = 1;            // 1: this host; 2: two namespace hosts, ranks placed host by host
  int hostRanks[2] = {0, 0};
  int steps;
  Fault fault = Fault::kNone;
  int faultRank = -1;
  int faultStep = -1;

  // twoHosts: namespace hosts are there, so the seed may draw a layout across two of them.
  static Job fromSeed(uint64_t seed, bool twoHosts = false);
  // The survivors shrink after the fault (a rank killed, or exiting without destroying).
  bool shrinks() const { return fault == Fault::kKill || fault == Fault::kExit; }
  int hostOf(int rank) const { return hosts == 1 || rank < hostRanks[0] ? 0 : 1; }
  int localRank(int rank) const { return rank - (hostOf(rank) == 0 ? 0 : hostRanks[0]); }
  // The same step on every rank (the mismatching rank changes its count itself).
  Step step(int i) const;
  std::string describe() const;
};

// Input element `i` of rank `r` at step `s`: a small integer, exact in every datatype used, and
// small enough that sums over 4 ranks stay exact.
inline int64_t inputValue(int s, int r, size_t i) { return static_cast<int64_t>((r * 7 + i * 3 + s * 5) % 13) - 6; }

}  // namespace cfxcampaign
