// A collective call in 64 bits, for the checks that ranks called the same collective: messages
// between hosts carry it (net::CallTag), and the shared-memory steps of a call that spans hosts
// carry it in their descriptors, so ranks in different calls are told so instead of exchanging
// the wrong data or waiting for each other.
//
// Bits: 63 set (a packed call is never 0) | collective (3) | datatype (4) | op + 1 (3) |
// root + 1 (17) | count modulo 2^36 (36).
#pragma once

#include <cstdint>
#include <string>

#include "shm_layout.h"
#include "transport/net/transport.h"

namespace conflux {

// Packs what ranks must agree on in `d` (not its sequence numbers or outer call).
uint64_t packCall(const OpDescriptor& d);
// The inverse, up to the count's 36 bits; seq stays 0.
OpDescriptor unpackCall(uint64_t call);
// "AllReduce count 7 float32 sum" (and " root R" where it has one).
std::string describeCall(const OpDescriptor& d);
// "call #12 (AllReduce count 7 float32 sum)".
std::string describeCallTag(const net::CallTag& t);

}  // namespace conflux
