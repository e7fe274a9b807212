#include "campaign/job.h"

#include <random>

#include "conflux/conflux.h"

namespace cfxcampaign {

const char* faultName(Fault f) {
  switch (f) {
    case Fault::kNone: return "none";
    case Fault::kKill: return "SIGKILL";
    case Fault::kStop: return "SIGSTOP";
    case Fault::kMismatch: return "mismatched count";
    case Fault::kExit: return "exit without destroy";
    case Fault::kAbort: return "cfxCommAbort from another thread";
    case Fault::kShmFull: return "shared memory full at init";
    case Fault::kLinkDown: return "link down";
    case Fault::kMismatchColl: return "mismatched collective";
  }
  return "?";
}

const char* collName(Coll c) {
  static const char* const kNames[] = {"AllReduce", "Reduce", "Broadcast", "AllGather", "ReduceScatter", "AlltoAll",
                                       "SendRecv"};
  return kNames[static_cast<int>(c)];
}

Job Job::fromSeed(uint64_t seed, bool twoHosts) {
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 1);
  std::mt19937_64 layout(seed * 0x2545f4914f6cdd1dull + 3);
  Job j;
  j.seed = seed;
  j.nranks = 1 + static_cast<int>(rng() % 4);
  j.hostRanks[0] = j.nranks;
  if (twoHosts && layout() % 3 == 0) {
    j.hosts = 2;
    j.hostRanks[0] = 1 + static_cast<int>(layout() % 2);
    j.hostRanks[1] = 1 + static_cast<int>(layout() % 2);
    j.nranks = j.hostRanks[0] + j.hostRanks[1];
  }
  j.steps = 6 + static_cast<int>(rng() % 15);
  // A quarter of the jobs run clean; a fault needs a survivor to observe it.
  int f = static_cast<int>(rng() % 8);
  j.fault = (f < 2 || j.nranks == 1) ? Fault::kNone : static_cast<Fault>(1 + (f - 2) % 6);
  if (j.hosts == 2 && j.fault != Fault::kNone && layout() % 4 == 0) j.fault = Fault::kLinkDown;
  // Half the mismatches call a different collective instead of a different count (drawn apart,
  // so the other jobs stay what they were).
  if (j.fault == Fault::kMismatch && std::mt19937_64(seed * 0x5851f42d4c957f2dull + 5)() % 2 == 0) {
    j.fault = Fault::kMismatchColl;
  }
  if (j.fault != Fault::kNone && j.fault != Fault::kShmFull) {
    j.faultRank = static_cast<int>(rng() % j.nranks);
    j.faultStep = 1 + static_cast<int>(rng() % (j.steps - 1));
  }
  return j;
}

Step Job::step(int i) const {
  std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(i) * 7919ull + 17);
  static const size_t kCounts[] = {0, 1, 7, 100, 255, 1000, 5000, 70000};
  static const int kTypes[] = {cfxInt32, cfxInt64, cfxFloat32, cfxFloat64};
  static const int kOps[] = {cfxSum, cfxMax, cfxMin};
  Step s;
  s.coll = static_cast<Coll>(rng() % 7);
  s.count = kCounts[rng() % 8];
  s.dtype = kTypes[rng() % 4];
  s.op = kOps[rng() % 3];
  s.root = static_cast<int>(rng() % nranks);
  s.stream = rng() % 3 == 0;
  s.group = s.coll == Coll::kSendRecv || rng() % 4 == 0;
  return s;
}

std::string Job::describe() const {
  std::string s = "seed " + std::to_string(seed) + ": " + std::to_string(nranks) + " rank(s)";
  if (hosts == 2) s += " on 2 hosts (" + std::to_string(hostRanks[0]) + "+" + std::to_string(hostRanks[1]) + ")";
  s += ", " + std::to_string(steps) + " steps, fault " + faultName(fault);
  if (faultRank >= 0) s += " on rank " + std::to_string(faultRank) + " at step " + std::to_string(faultStep);
  return s;
}

}  // namespace cfxcampaign
