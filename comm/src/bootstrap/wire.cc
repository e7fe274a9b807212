#include "bootstrap/wire.h"

#include <cstring>

#include "common/error.h"

namespace conflux::bootstrap {

namespace {

constexpr size_t kHelloBytes = 20 + kHostIdBytes;
constexpr size_t kPeerBytes = 4 + kHostIdBytes;
constexpr size_t kMaxAddressBytes = 256;

class Writer {
 public:
  void i32(int32_t v) { raw(&v, 4); }
  void u32(uint32_t v) { raw(&v, 4); }
  void fixedString(const std::string& s, size_t n) {
    std::vector<uint8_t> b(n, 0);
    std::memcpy(b.data(), s.data(), std::min(s.size(), n - 1));
    raw(b.data(), n);
  }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
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
  // [u32 length][bytes], the length at most `max`.
  std::string str(size_t max, const char* what) {
    uint32_t n = u32();
    if (n > max) throw Error(Status::kRemoteError, std::string("malformed bootstrap message: ") + what + " too long");
    need(n);
    std::string r(reinterpret_cast<const char*>(p_.data() + pos_), n);
    pos_ += n;
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
    case MsgType::kWelcome: return 8 + kMaxAddressBytes;
    case MsgType::kError: return 4 + kMaxMessageBytes;
    case MsgType::kBye: return 1;  // empty payload; the bound only has to be non-zero
    case MsgType::kChild: return 4;
    case MsgType::kUp:
    case MsgType::kDown: return maxRoundPayload(kMaxRanks);
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

std::vector<uint8_t> encodeError(int32_t status, const std::string& message) {
  Writer w;
  w.i32(status);
  std::string m = message.substr(0, kMaxMessageBytes);
  w.raw(m.data(), m.size());
  return w.out;
}

StatusMsg decodeError(const std::vector<uint8_t>& p) {
  Reader r(p);
  StatusMsg s;
  s.status = r.i32();
  if (s.status <= static_cast<int32_t>(Status::kSuccess) || s.status > static_cast<int32_t>(Status::kAborted)) {
    s.status = static_cast<int32_t>(Status::kRemoteError);
  }
  s.message.assign(p.begin() + 4, p.end());
  return s;
}

std::vector<uint8_t> refusalFrame(const std::string& why) {
  return frame(MsgType::kError, Secret{}, encodeError(static_cast<int32_t>(Status::kInvalidUsage), why));
}

bool isRefusal(const FrameHeader& h) {
  if (h.magic != kFrameMagic || h.version != kProtocolVersion || h.type != static_cast<uint16_t>(MsgType::kError)) {
    return false;
  }
  if (h.length > 4 + kMaxMessageBytes) return false;
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
  w.u32(h.treePort);
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
  h.treePort = r.u32();
  h.hostId = r.fixedString(kHostIdBytes);
  r.expectEnd();
  return h;
}

std::vector<uint8_t> encodeWelcome(const Welcome& welcome) {
  Writer w;
  w.i32(welcome.nranks);
  w.str(welcome.parent.substr(0, kMaxAddressBytes));
  return w.out;
}

Welcome decodeWelcome(const std::vector<uint8_t>& p) {
  Reader r(p);
  Welcome w;
  w.nranks = r.i32();
  if (w.nranks <= 0 || w.nranks > kMaxRanks) throw Error(Status::kRemoteError, "malformed bootstrap welcome");
  w.parent = r.str(kMaxAddressBytes, "parent address");
  r.expectEnd();
  return w;
}

std::vector<uint8_t> encodePeer(const PeerInfo& p) {
  Writer w;
  w.i32(p.pid);
  w.fixedString(p.hostId, kHostIdBytes);
  return w.out;
}

PeerInfo decodePeer(const std::string& blob) {
  std::vector<uint8_t> bytes(blob.begin(), blob.end());
  if (bytes.size() != kPeerBytes) throw Error(Status::kRemoteError, "malformed bootstrap peer record");
  Reader r(bytes);
  PeerInfo p;
  p.pid = r.i32();
  p.hostId = r.fixedString(kHostIdBytes);
  return p;
}

size_t maxRoundPayload(int nranks) {
  return 16 + kMaxMessageBytes + static_cast<size_t>(nranks) * (8 + kMaxExchangeBytes);
}

std::vector<uint8_t> encodeUp(const TreeUp& u) {
  Writer w;
  w.i32(u.status.status);
  w.i32(u.failedRank);
  w.str(u.status.message.substr(0, kMaxMessageBytes));
  w.u32(static_cast<uint32_t>(u.blobs.size()));
  for (const auto& [rank, blob] : u.blobs) {
    w.i32(rank);
    w.str(blob);
  }
  return w.out;
}

TreeUp decodeUp(const std::vector<uint8_t>& p, int nranks) {
  Reader r(p);
  TreeUp u;
  u.status.status = r.i32();
  u.failedRank = r.i32();
  u.status.message = r.str(kMaxMessageBytes, "status message");
  uint32_t n = r.u32();
  if (static_cast<int64_t>(n) > nranks) throw Error(Status::kRemoteError, "malformed bootstrap round: too many blobs");
  u.blobs.resize(n);
  for (auto& [rank, blob] : u.blobs) {
    rank = r.i32();
    if (rank < 0 || rank >= nranks) throw Error(Status::kRemoteError, "malformed bootstrap round: rank out of range");
    blob = r.str(kMaxExchangeBytes, "blob");
  }
  r.expectEnd();
  return u;
}

std::vector<uint8_t> encodeDown(const TreeDown& d) {
  Writer w;
  w.i32(d.status.status);
  w.str(d.status.message.substr(0, kMaxMessageBytes));
  w.u32(static_cast<uint32_t>(d.blobs.size()));
  for (const auto& b : d.blobs) w.str(b);
  return w.out;
}

TreeDown decodeDown(const std::vector<uint8_t>& p, int nranks) {
  Reader r(p);
  TreeDown d;
  d.status.status = r.i32();
  d.status.message = r.str(kMaxMessageBytes, "status message");
  uint32_t n = r.u32();
  if (n != 0 && static_cast<int64_t>(n) != nranks) {
    throw Error(Status::kRemoteError, "malformed bootstrap round: wrong count");
  }
  d.blobs.resize(n);
  for (auto& b : d.blobs) b = r.str(kMaxExchangeBytes, "blob");
  r.expectEnd();
  return d;
}

}  // namespace conflux::bootstrap
