#include "agreement.h"

#include <array>
#include <chrono>
#include <vector>

#include "conflux/train/error.h"

namespace conflux::train {

void Checksum::add(uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h_ ^= (v >> (8 * i)) & 0xffu;
    h_ *= 0x100000001b3ull;
  }
}

void agreeOnRegistration(cfxComm_t comm, const std::string& what, uint64_t checksum, uint64_t items,
                         uint64_t elements) {
  int nranks = 0;
  check(cfxCommCount(comm, &nranks), "cfxCommCount", comm);
  std::array<uint64_t, 3> mine = {checksum, items, elements};
  std::vector<uint64_t> all(3 * static_cast<size_t>(nranks));
  check(cfxAllGather(mine.data(), all.data(), 3, cfxUint64, comm, nullptr), "registration check (AllGather)", comm);
  for (int r = 1; r < nranks; ++r) {
    const uint64_t* o = &all[3 * static_cast<size_t>(r)];
    if (o[0] == all[0] && o[1] == all[1] && o[2] == all[2]) continue;
    throw Error(cfxInvalidUsage, what + " differ across ranks: rank " + std::to_string(r) + " registered " +
                                     std::to_string(o[1]) + " items, " + std::to_string(o[2]) +
                                     " elements (checksum " + std::to_string(o[0]) + "), rank 0 registered " +
                                     std::to_string(all[1]) + " items, " + std::to_string(all[2]) +
                                     " elements (checksum " + std::to_string(all[0]) + ")");
  }
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace conflux::train
