// Bootstrap messages on the wire. Every frame starts with a fixed header carrying a magic, the
// protocol version, the message type, a bounded payload length and the job's secret. Payloads are
// flat, fixed-layout records (no object deserialisation); each type has a size bound, and a frame
// that breaks any rule is rejected before its payload is read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"

namespace conflux::bootstrap {

inline constexpr uint32_t kFrameMagic = 0x43465842;  // "CFXB"
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr size_t kHostIdBytes = 128;
inline constexpr size_t kMaxMessageBytes = 1024;
inline constexpr int kMaxRanks = 1 << 16;

enum class MsgType : uint16_t {
  kHello = 1,
  kWelcome = 2,
  kError = 3,
  kBarrier = 4,
  kRelease = 5,
  kBye = 6,
  kExchange = 7,   // a rank's blob for an all-gather (network addresses)
  kExchanged = 8,  // every rank's blob, in rank order
};
inline constexpr size_t kMaxExchangeBytes = 2048;

struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;
  uint32_t length;
  uint32_t reserved;
  uint8_t secret[16];
};
static_assert(sizeof(FrameHeader) == 32, "frame header is 32 bytes on the wire");

// Largest payload a frame of `type` may carry (0 for unknown types).
size_t maxPayload(MsgType type);
// Checks magic, version, secret, type and length. Returns an empty string if valid, else why not.
std::string validateHeader(const FrameHeader& h, const Secret& secret);
std::vector<uint8_t> frame(MsgType type, const Secret& secret, const std::vector<uint8_t>& payload);
// The root's answer to a peer that did not show the job's secret: an error frame whose secret is
// all zeros (the job's secret is not revealed to it), so the peer can say why it was refused.
std::vector<uint8_t> refusalFrame(const std::string& why);
bool isRefusal(const FrameHeader& h);

struct Hello {
  uint32_t libVersion = 0;
  int32_t nranks = 0;
  int32_t rank = 0;
  int32_t pid = 0;
  std::string hostId;
};
struct PeerInfo {
  int32_t pid = 0;
  std::string hostId;
};
struct StatusMsg {  // barrier request and release
  int32_t status = 0;
  std::string message;
};

std::vector<uint8_t> encodeHello(const Hello& h);
Hello decodeHello(const std::vector<uint8_t>& p);
std::vector<uint8_t> encodeWelcome(const std::vector<PeerInfo>& peers);
std::vector<PeerInfo> decodeWelcome(const std::vector<uint8_t>& p);
std::vector<uint8_t> encodeStatus(const StatusMsg& s);
StatusMsg decodeStatus(const std::vector<uint8_t>& p);
// kExchanged: [u32 n] then n times [u32 length][bytes]; decoding checks n and every length.
std::vector<uint8_t> encodeExchanged(const std::vector<std::string>& blobs);
std::vector<std::string> decodeExchanged(const std::vector<uint8_t>& p, int nranks);

}  // namespace conflux::bootstrap
