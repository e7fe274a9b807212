// Two ranks' contexts over one real shared-memory segment, in one process: for tests of the
// shared-memory state a Context keeps (poison_test.cc, wait_test.cc).
#pragma once

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "shm_layout.h"

namespace conflux {

struct TwoContexts {
  std::string name = "cfx-two-contexts-" + std::to_string(getpid());
  std::unique_ptr<Context> c[2];
  TwoContexts() {
    Layout layout = Layout::fromEnv(2);
    shm::Segment seg = shm::Segment::create(name, layout.totalBytes());
    layout.writeHeader(*reinterpret_cast<SegmentHeader*>(seg.data()));
    shm::Segment other = shm::Segment::open(name);
    seg.unlink();
    WaitSettings w;
    std::vector<pid_t> pids = {getpid(), getpid()};
    c[0] = std::make_unique<Context>(std::move(seg), 0, pids, w);
    c[1] = std::make_unique<Context>(std::move(other), 1, pids, w);
  }
};

}  // namespace conflux
