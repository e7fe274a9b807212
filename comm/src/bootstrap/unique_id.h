// What a cfxUniqueId holds: the bootstrap root's address and a random 128-bit secret.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "conflux/conflux.h"
#include "transport/socket/socket.h"

namespace conflux::bootstrap {

using Secret = std::array<uint8_t, 16>;

struct UniqueIdData {
  net::SockAddr root;
  Secret secret{};

  cfxUniqueId encode() const;
  // Throws Error(kInvalidArgument) if `id` is not a Conflux unique id.
  static UniqueIdData decode(const cfxUniqueId& id);
  static std::string toHex(const cfxUniqueId& id);
  static cfxUniqueId fromHex(const std::string& hex);
};

Secret randomSecret();
bool secretsEqual(const Secret& a, const uint8_t* b);  // constant time
std::string hex(const uint8_t* data, size_t n);
uint64_t hash64(const void* data, size_t n, uint64_t seed = 0);

}  // namespace conflux::bootstrap
