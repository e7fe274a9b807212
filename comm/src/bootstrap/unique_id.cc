#include "bootstrap/unique_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace conflux::bootstrap {

namespace {
constexpr uint32_t kIdMagic = 0x43465849;  // "CFXI"
constexpr uint16_t kIdVersion = 1;
// Layout: magic u32 | version u16 | family u16 | port u16 (network order) | pad u16 | address[16]
//         | secret[16] | zeros.
constexpr size_t kPortOffset = 8;
constexpr size_t kAddrOffset = 12;
constexpr size_t kSecretOffset = kAddrOffset + 16;
static_assert(kSecretOffset + 16 <= CFX_UNIQUE_ID_BYTES, "unique id too small");
}  // namespace

cfxUniqueId UniqueIdData::encode() const {
  cfxUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(id.internal, &kIdMagic, 4);
  std::memcpy(id.internal + 4, &kIdVersion, 2);
  uint16_t family = static_cast<uint16_t>(root.family());
  std::memcpy(id.internal + 6, &family, 2);
  if (root.family() == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&root.storage);
    std::memcpy(id.internal + kPortOffset, &in->sin_port, 2);
    std::memcpy(id.internal + kAddrOffset, &in->sin_addr, 4);
  } else {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&root.storage);
    std::memcpy(id.internal + kPortOffset, &in6->sin6_port, 2);
    std::memcpy(id.internal + kAddrOffset, &in6->sin6_addr, 16);
  }
  std::memcpy(id.internal + kSecretOffset, secret.data(), secret.size());
  return id;
}

UniqueIdData UniqueIdData::decode(const cfxUniqueId& id) {
  uint32_t magic;
  uint16_t version, family;
  std::memcpy(&magic, id.internal, 4);
  std::memcpy(&version, id.internal + 4, 2);
  std::memcpy(&family, id.internal + 6, 2);
  if (magic != kIdMagic) throw Error(Status::kInvalidArgument, "commId is not a Conflux unique id (bad magic)");
  if (version != kIdVersion) {
    throw Error(Status::kInvalidArgument, "commId comes from an incompatible Conflux version (id version " +
                                              std::to_string(version) + ")");
  }
  UniqueIdData d;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&d.root.storage);
    in->sin_family = AF_INET;
    std::memcpy(&in->sin_port, id.internal + kPortOffset, 2);
    std::memcpy(&in->sin_addr, id.internal + kAddrOffset, 4);
    d.root.len = sizeof(sockaddr_in);
  } else if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&d.root.storage);
    in6->sin6_family = AF_INET6;
    std::memcpy(&in6->sin6_port, id.internal + kPortOffset, 2);
    std::memcpy(&in6->sin6_addr, id.internal + kAddrOffset, 16);
    d.root.len = sizeof(sockaddr_in6);
  } else {
    throw Error(Status::kInvalidArgument, "commId holds no valid root address");
  }
  std::memcpy(d.secret.data(), id.internal + kSecretOffset, d.secret.size());
  return d;
}

std::string hex(const uint8_t* data, size_t n) {
  static const char* const kDigits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[data[i] >> 4];
    s += kDigits[data[i] & 15];
  }
  return s;
}

std::string UniqueIdData::toHex(const cfxUniqueId& id) {
  return hex(reinterpret_cast<const uint8_t*>(id.internal), sizeof(id.internal));
}

cfxUniqueId UniqueIdData::fromHex(const std::string& s) {
  cfxUniqueId id;
  if (s.size() != 2 * sizeof(id.internal)) {
    throw Error(Status::kInvalidArgument, "CFX_UNIQUE_ID must be " + std::to_string(2 * sizeof(id.internal)) +
                                              " hex digits, got " + std::to_string(s.size()));
  }
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw Error(Status::kInvalidArgument, "CFX_UNIQUE_ID has a non-hex character");
  };
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    id.internal[i] = static_cast<char>(nibble(s[2 * i]) << 4 | nibble(s[2 * i + 1]));
  }
  return id;
}

Secret randomSecret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    ssize_t n = getrandom(s.data() + got, s.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throwSystemError("getrandom", errno);
    }
    got += static_cast<size_t>(n);
  }
  return s;
}

bool secretsEqual(const Secret& a, const uint8_t* b) {
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = diff | (a[i] ^ b[i]);
  return diff == 0;
}

uint64_t hash64(const void* data, size_t n, uint64_t seed) {
  // FNV-1a followed by a splitmix finaliser.
  uint64_t h = 1469598103934665603ull ^ seed;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

}  // namespace conflux::bootstrap
