// Group calls, per calling thread as in NCCL. Collectives inside a group go into Conflux's own
// group (cfxGroupStart/End); what the shim adds is what must outlive the call that made it: the
// scaled copies of PreMulSum inputs, and communicator inits issued inside a group (NCCL's way for
// one thread to create several ranks' communicators), which run together, one thread each, at the
// outermost ncclGroupEnd.
#pragma once

#include <functional>
#include <vector>

#include "conflux/conflux.h"
#include "nccl_abi.h"

namespace cfx_nccl {

bool inGroup();
void groupStart();
// Runs deferred inits, then ends Conflux's group; throws ShimError on failure.
void groupEnd();

// A scratch buffer that lives until the outermost ncclGroupEnd (only inside a group).
std::vector<char>& groupScratch();
// Runs `fn` after the outermost ncclGroupEnd has run the group successfully (only inside a group);
// dropped, unrun, when the group fails. A ShimError from `fn` is the group's error.
void afterGroup(std::function<void()> fn);

struct PendingInit {
  ncclComm_t* out;
  int nranks;
  cfxUniqueId id;
  int rank;
  cfxConfig_t config;
  int cudaDev;  // the device current when the init was issued (NCCL's rule)
};
void deferInit(const PendingInit& init);
// Creates several ranks' communicators at once from this process, one thread each (they rendezvous
// with one another); throws ShimError naming the first rank that failed.
void initTogether(const std::vector<PendingInit>& inits);

}  // namespace cfx_nccl
