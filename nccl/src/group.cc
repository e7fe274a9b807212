#include "group.h"

#include <memory>
#include <string>
#include <thread>

#include "shim.h"

namespace cfx_nccl {

namespace {

struct GroupState {
  int depth = 0;
  std::vector<std::unique_ptr<std::vector<char>>> scratch;
  std::vector<PendingInit> inits;
  std::vector<std::function<void()>> after;
};
thread_local GroupState tlsGroup;

}  // namespace

bool inGroup() { return tlsGroup.depth > 0; }

void groupStart() {
  check(cfxGroupStart(), nullptr);
  ++tlsGroup.depth;
}

void groupEnd() {
  GroupState& g = tlsGroup;
  if (g.depth == 0) throw ShimError(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  std::vector<PendingInit> inits;
  if (g.depth == 1) inits.swap(g.inits);
  // Inits first: an init and a collective on the new communicator cannot share one group.
  std::string initError;
  ncclResult_t initCode = ncclSuccess;
  try {
    if (!inits.empty()) initTogether(inits);
  } catch (const ShimError& e) {
    initError = e.what();
    initCode = e.code();
  }
  --g.depth;
  const cfxResult_t r = cfxGroupEnd();
  std::vector<std::function<void()>> after;
  if (g.depth == 0) after.swap(g.after);
  struct Release {  // the scratch goes after the deferred work that reads it, also when it throws
    GroupState& g;
    ~Release() {
      if (g.depth == 0) g.scratch.clear();
    }
  } release{g};
  if (initCode != ncclSuccess) throw ShimError(initCode, initError);
  check(r, nullptr);
  for (auto& fn : after) fn();
}

void afterGroup(std::function<void()> fn) { tlsGroup.after.push_back(std::move(fn)); }

std::vector<char>& groupScratch() {
  tlsGroup.scratch.push_back(std::make_unique<std::vector<char>>());
  return *tlsGroup.scratch.back();
}

void deferInit(const PendingInit& init) { tlsGroup.inits.push_back(init); }

void initTogether(const std::vector<PendingInit>& inits) {
  std::vector<cfxResult_t> results(inits.size(), cfxSuccess);
  std::vector<std::string> errors(inits.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inits.size(); ++i) {
    threads.emplace_back([&, i] {
      const PendingInit& p = inits[i];
      cfxComm_t inner = nullptr;
      cfxConfig_t config = p.config;
      results[i] = cfxCommInitRankConfig(&inner, p.nranks, p.id, p.rank, &config);
      if (results[i] == cfxSuccess) {
        *p.out = wrap(inner, p.cudaDev);
      } else {
        *p.out = nullptr;
        errors[i] = cfxGetLastError(nullptr);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < inits.size(); ++i) {
    if (results[i] != cfxSuccess) {
      throw ShimError(toNccl(results[i]), "rank " + std::to_string(inits[i].rank) + ": " + errors[i]);
    }
  }
}

}  // namespace cfx_nccl
