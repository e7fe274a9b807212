#include "bootstrap/wire.h"

#include <cstring>

#include "common/error.h"

namespace conflux::bootstrap {

namespace {

constexpr size_t kHelloBytes = 16 + kHostIdBytes;
constexpr size_t kPeerBytes = 4 + kHostIdBytes;

class Writer {
 public:
  void i32(int32_t v) { raw(&v, 4); }
  void u32(uint32_t v) { raw(&v, 4); }
  void fixedString(const std::string& s, size_t n) {
    std::vector<uint8_t> b(n, 0);
    std::memcpy(b.data(), s.data(), std::min(s.size(), n - 1));
    raw(b.data(), n);
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& p) : p_(p) {}
  int32_t i32() {
    int32_t v;
    raw(&v, 4);
    return v;
  }
  uint32_t u32() {
    uint32_t v;
    raw(&v, 4);
    return v;
  }
  std::string fixedString(size_t n) {
    need(n);
    const char* s = reinterpret_cast<const char*>(p_.data() + pos_);
    std::string r(s, strnlen(s, n));
    pos_ += n;
    return r;
  }
  std::string rest() {
    std::string r(reinterpret_cast<const char*>(p_.data() + pos_), p_.size() - pos_);
    pos_ = p_.size();
    return r;
  }
  void raw(void* out, size_t n) {
    need(n);
    std::memcpy(out, p_.data() + pos_, n);
    pos_ += n;
  }
  void expectEnd() const {
    if (pos_ != p_.size()) throw Error(Status::kRemoteError, "malformed bootstrap message: trailing bytes");
  }

 private:
  void need(size_t n) const {
    if (p_.size() - pos_ < n) throw Error(Status::kRemoteError, "malformed bootstrap message: truncated");
  }
  const std::vector<uint8_t>& p_;
  size_t pos_ = 0;
};

}  // namespace

size_t maxPayload(MsgType type) {
  switch (type) {
    case MsgType::kHello: return kHelloBytes;
    case MsgType::kWelcome: return 4 + static_cast<size_t>(kMaxRanks) * kPeerBytes;
    case MsgType::kError: return kMaxMessageBytes;
    case MsgType::kBarrier:
    case MsgType::kRelease: return 4 + kMaxMessageBytes;
    case MsgType::kBye: return 1;  // empty payload; the bound only has to be non-zero
    case MsgType::kExchange: return kMaxExchangeBytes;
    case MsgType::kExchanged: return 4 + static_cast<size_t>(kMaxRanks) * (4 + kMaxExchangeBytes);
  }
  return 0;
}

std::string validateHeader(const FrameHeader& h, const Secret& secret) {
  if (h.magic != kFrameMagic) return "bad magic";
  if (h.version != kProtocolVersion) return "protocol version " + std::to_string(h.version) + " (expected " +
                                            std::to_string(kProtocolVersion) + ")";
  if (!secretsEqual(secret, h.secret)) return "wrong secret";
  size_t limit = maxPayload(static_cast<MsgType>(h.type));
  if (limit == 0) return "unknown message type " + std::to_string(h.type);
  if (h.length > limit) return "payload of " + std::to_string(h.length) + " bytes exceeds the bound of " +
                               std::to_string(limit);
  return {};
}

std::vector<uint8_t> frame(MsgType type, const Secret& secret, const std::vector<uint8_t>& payload) {
  FrameHeader h{};
  h.magic = kFrameMagic;
  h.version = kProtocolVersion;
  h.type = static_cast<uint16_t>(type);
  h.length = static_cast<uint32_t>(payload.size());
  std::memcpy(h.secret, secret.data(), secret.size());
  std::vector<uint8_t> out(sizeof(h) + payload.size());
  std::memcpy(out.data(), &h, sizeof(h));
  if (!payload.empty()) std::memcpy(out.data() + sizeof(h), payload.data(), payload.size());
  return out;
}

std::vector<uint8_t> refusalFrame(const std::string& why) {
  std::string m = why.substr(0, kMaxMessageBytes);
  return frame(MsgType::kError, Secret{}, std::vector<uint8_t>(m.begin(), m.end()));
}

bool isRefusal(const FrameHeader& h) {
  if (h.magic != kFrameMagic || h.version != kProtocolVersion || h.type != static_cast<uint16_t>(MsgType::kError)) {
    return false;
  }
  if (h.length > kMaxMessageBytes) return false;
  for (uint8_t b : h.secret) {
    if (b != 0) return false;
  }
  return true;
}

std::vector<uint8_t> encodeHello(const Hello& h) {
  Writer w;
  w.u32(h.libVersion);
  w.i32(h.nranks);
  w.i32(h.rank);
  w.i32(h.pid);
  w.fixedString(h.hostId, kHostIdBytes);
  return w.out;
}

Hello decodeHello(const std::vector<uint8_t>& p) {
  Reader r(p);
  Hello h;
  h.libVersion = r.u32();
  h.nranks = r.i32();
  h.rank = r.i32();
  h.pid = r.i32();
  h.hostId = r.fixedString(kHostIdBytes);
  r.expectEnd();
  return h;
}

std::vector<uint8_t> encodeWelcome(const std::vector<PeerInfo>& peers) {
  Writer w;
  w.i32(static_cast<int32_t>(peers.size()));
  for (const auto& p : peers) {
    w.i32(p.pid);
    w.fixedString(p.hostId, kHostIdBytes);
  }
  return w.out;
}

std::vector<PeerInfo> decodeWelcome(const std::vector<uint8_t>& p) {
  Reader r(p);
  int32_t n = r.i32();
  if (n <= 0 || n > kMaxRanks || p.size() != 4 + static_cast<size_t>(n) * kPeerBytes) {
    throw Error(Status::kRemoteError, "malformed bootstrap welcome");
  }
  std::vector<PeerInfo> peers(n);
  for (auto& peer : peers) {
    peer.pid = r.i32();
    peer.hostId = r.fixedString(kHostIdBytes);
  }
  r.expectEnd();
  return peers;
}

std::vector<uint8_t> encodeStatus(const StatusMsg& s) {
  Writer w;
  w.i32(s.status);
  std::string m = s.message.substr(0, kMaxMessageBytes);
  w.raw(m.data(), m.size());
  return w.out;
}

StatusMsg decodeStatus(const std::vector<uint8_t>& p) {
  Reader r(p);
  StatusMsg s;
  s.status = r.i32();
  s.message = r.rest();
  return s;
}

std::vector<uint8_t> encodeExchanged(const std::vector<std::string>& blobs) {
  Writer w;
  w.u32(static_cast<uint32_t>(blobs.size()));
  for (const auto& b : blobs) {
    w.u32(static_cast<uint32_t>(b.size()));
    w.raw(b.data(), b.size());
  }
  return w.out;
}

std::vector<std::string> decodeExchanged(const std::vector<uint8_t>& p, int nranks) {
  Reader r(p);
  uint32_t n = r.u32();
  if (static_cast<int64_t>(n) != nranks) throw Error(Status::kRemoteError, "malformed bootstrap exchange: wrong count");
  std::vector<std::string> out(n);
  for (auto& b : out) {
    uint32_t len = r.u32();
    if (len > kMaxExchangeBytes) throw Error(Status::kRemoteError, "malformed bootstrap exchange: blob too long");
    b.resize(len);
    r.raw(b.data(), len);
  }
  r.expectEnd();
  return out;
}

}  // namespace conflux::bootstrap
