#include "comm_setup.h"

#include <algorithm>
#include <cstdio>
#include <new>

#include "bootstrap/unique_id.h"
#include "common/env.h"
#include "common/log.h"
#include "shm_layout.h"
#include "topology/host_id.h"
#include "topology/placement.h"

namespace conflux::setup {

std::string segmentName(uint64_t commHash) {
  std::string host = topology::hostId();
  uint64_t hostHash = bootstrap::hash64(host.data(), host.size());
  char name[64];
  std::snprintf(name, sizeof(name), "cfx-%016llx-%016llx", static_cast<unsigned long long>(commHash),
                static_cast<unsigned long long>(hostHash));
  return name;
}

SegmentPlan segmentPlanFor(const topology::Plan& p, std::vector<int> rankNuma) {
  SegmentPlan s;
  s.rankNuma = std::move(rankNuma);
  s.twoLevel = p.reduction == topology::Reduction::kTwoLevel;
  s.placeMemory = p.placeMemory;
  s.stagingNuma = p.stagingNuma;
  return s;
}

SegmentPlan segmentPlanOf(const topology::Plan& p) {
  std::vector<int> numa;
  for (const auto& r : p.ranks) numa.push_back(r.numa);
  return segmentPlanFor(p, std::move(numa));
}

shm::Segment createSegment(uint64_t commHash, const SegmentPlan& sp) {
  const int n = static_cast<int>(sp.rankNuma.size());
  Layout layout = Layout::fromEnv(n);
  std::vector<int> nodes = sp.rankNuma;
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  const bool twoLevel = sp.twoLevel && nodes.size() >= 2;
  if (twoLevel) layout.domains = static_cast<uint32_t>(nodes.size());
  std::vector<std::string> notes;
  auto place = [&](std::byte* base) {
    if (!sp.placeMemory) return;
    auto prefer = [&](size_t offset, int node, const std::string& what) {
      std::string why = topology::preferNode(base + offset, layout.slotBytes, node);
      if (!why.empty()) notes.push_back(what + " on NUMA " + std::to_string(node) + ": " + why);
    };
    for (int r = 0; r < n; ++r) prefer(layout.slotsOffset() + r * layout.slotBytes, sp.rankNuma[r], "slot of local rank " + std::to_string(r));
    prefer(layout.scratchOffset(), sp.stagingNuma, "staging buffer");
    for (uint32_t d = 0; d < layout.domains; ++d) {
      prefer(layout.domainsOffset() + d * layout.slotBytes, nodes[d], "partials of domain " + std::to_string(d));
    }
  };
  shm::Segment seg = shm::Segment::create(segmentName(commHash), layout.totalBytes(), place);
  if (twoLevel) {
    auto* control = reinterpret_cast<RankControl*>(seg.data() + layout.controlOffset());
    for (int r = 0; r < n; ++r) {
      control[r].domain = static_cast<int32_t>(std::find(nodes.begin(), nodes.end(), sp.rankNuma[r]) - nodes.begin());
    }
  }
  layout.writeHeader(*reinterpret_cast<SegmentHeader*>(seg.data()));
  if (!notes.empty()) {
    logInfo("TOPO segment placement not applied for " + std::to_string(notes.size()) + " area(s), first: " + notes[0]);
  } else if (sp.placeMemory) {
    logInfo("TOPO segment placed: each slot on its rank's NUMA node, staging on NUMA " + std::to_string(sp.stagingNuma) +
            (twoLevel ? ", domain partials on their nodes" : ""));
  }
  return seg;
}

Outcome capture(const std::function<void()>& f) {
  try {
    f();
    return {};
  } catch (...) {
    return currentException();
  }
}

std::chrono::milliseconds bootstrapTimeout() {
  return std::chrono::milliseconds(static_cast<int64_t>(env::getDouble("CFX_BOOTSTRAP_TIMEOUT") * 1000));
}

}  // namespace conflux::setup
