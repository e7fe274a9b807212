// Registration agreement: before a wrapper issues its first data collective, every rank checks
// that all ranks registered the same thing (a checksum of counts and datatypes), so a mismatch is
// reported on every rank instead of becoming a hang or a silent mix-up.
#pragma once

#include <conflux/conflux.h>

#include <cstdint>
#include <string>

namespace conflux::train {

// FNV-1a, 64-bit, folded value by value.
class Checksum {
 public:
  void add(uint64_t v);
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// Collective over `comm` (a fixed-size AllGather, so it cannot hang on a mismatch). Throws
// Error(cfxInvalidUsage) on every rank naming the first rank whose registration differs from
// rank 0's. `what` names the wrapper ("DDP parameters", "FSDP units").
void agreeOnRegistration(cfxComm_t comm, const std::string& what, uint64_t checksum, uint64_t items,
                         uint64_t elements);

// Wall-clock seconds (steady clock).
double nowSeconds();

}  // namespace conflux::train
