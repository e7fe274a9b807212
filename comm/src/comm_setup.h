// The steps of forming a communicator that init, split and shrink share: the shared-memory
// segment of each host (named, laid out and placed from the plan), and set-up outcomes that every
// rank reports at the next barrier.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "outcome.h"
#include "topology/plan.h"
#include "transport/shm/segment.h"

namespace conflux::setup {

std::string segmentName(uint64_t commHash);

// What the first rank of a host needs from the plan to lay out and place the segment: each local
// rank's NUMA node, whether the reduction is two-level (then ranks are grouped by node, in
// ascending node order), and where the cross-domain staging goes.
struct SegmentPlan {
  std::vector<int> rankNuma;
  bool twoLevel = false;
  bool placeMemory = false;
  int stagingNuma = 0;
};
SegmentPlan segmentPlanOf(const topology::Plan& p);
// The plan's placement for the local ranks whose NUMA nodes are `rankNuma` (a split or a shrink:
// ranks keep the binding of their init).
SegmentPlan segmentPlanFor(const topology::Plan& p, std::vector<int> rankNuma);

// Created by the first rank of each host: the segment with its header filled in, its staging
// memory placed as planned (each slot on its rank's node, each domain's partials on that
// domain's node, the scratch on the staging node), and each rank's domain recorded.
shm::Segment createSegment(uint64_t commHash, const SegmentPlan& sp);

// A set-up step's outcome, whatever it threw: every rank must reach the barrier that follows with
// its outcome, or its peers learn only that it disconnected during initialisation.
Outcome capture(const std::function<void()>& f);

std::chrono::milliseconds bootstrapTimeout();

// Address blobs that start with this byte carry a rank's set-up error instead of an address, so
// a rank that fails before it can publish an address still releases the others.
constexpr char kFailedBlob = '!';

// What the secrets of communicators made from another are derived for (Rendezvous::derive).
constexpr uint64_t kSplitSecret = 1;
constexpr uint64_t kShrinkSecret = 2;

}  // namespace conflux::setup
