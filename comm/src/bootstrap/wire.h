// Bootstrap messages on the wire. Every frame starts with a fixed header carrying a magic, the
// protocol version, the message type, a bounded payload length and the job's secret. Payloads are
// flat, fixed-layout records (no object deserialisation); each type has a size bound, and a frame
// that breaks any rule is rejected before its payload is read.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/unique_id.h"

namespace conflux::bootstrap {

inline constexpr uint32_t kFrameMagic = 0x43465842;  // "CFXB"
inline constexpr uint16_t kProtocolVersion = 2;
inline constexpr size_t kHostIdBytes = 128;
inline constexpr size_t kMaxMessageBytes = 1024;
inline constexpr int kMaxRanks = 1 << 16;

// A rank joins the root (kHello, answered by kWelcome: its parent in the bootstrap tree), connects
// to its parent (kChild), and from then on runs barriers and all-gathers over the tree: kUp carries
// a subtree's status and blobs towards rank 0, kDown the outcome and every blob back. The root
// keeps each rank's connection until its kBye only to tell every rank a job-level error.
enum class MsgType : uint16_t {
  kHello = 1,
  kWelcome = 2,
  kError = 3,
  kBye = 6,
  kChild = 9,  // a rank to its parent in the tree: its rank
  kUp = 10,
  kDown = 11,
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
  uint32_t treePort = 0;  // where the rank listens for its children, at the address it reached the root from
  std::string hostId;
};
struct Welcome {
  int32_t nranks = 0;
  std::string parent;  // "host:port" of the rank's parent in the tree; empty for rank 0
};
struct PeerInfo {
  int32_t pid = 0;
  std::string hostId;
};
struct StatusMsg {  // a round's or an error's status and message
  int32_t status = 0;
  std::string message;
};

// A job-level error (kError): the status every rank reports ([i32 status], then the message);
// unknown statuses read as a remote error.
std::vector<uint8_t> encodeError(int32_t status, const std::string& message);
StatusMsg decodeError(const std::vector<uint8_t>& p);
std::vector<uint8_t> encodeHello(const Hello& h);
Hello decodeHello(const std::vector<uint8_t>& p);
std::vector<uint8_t> encodeWelcome(const Welcome& w);
Welcome decodeWelcome(const std::vector<uint8_t>& p);
std::vector<uint8_t> encodePeer(const PeerInfo& p);
PeerInfo decodePeer(const std::string& blob);

// A subtree's part of one round: the failure of its lowest failed rank (status 0: none) and the
// blobs of its ranks.
struct TreeUp {
  StatusMsg status;
  int32_t failedRank = -1;
  std::vector<std::pair<int32_t, std::string>> blobs;  // (rank, blob)
};
// The round's outcome, and every rank's blob in rank order (none for a barrier).
struct TreeDown {
  StatusMsg status;
  std::vector<std::string> blobs;
};
std::vector<uint8_t> encodeUp(const TreeUp& u);
// Checks every rank (in 0..nranks-1) and every blob's length.
TreeUp decodeUp(const std::vector<uint8_t>& p, int nranks);
std::vector<uint8_t> encodeDown(const TreeDown& d);
// Checks the count (0 or nranks) and every blob's length.
TreeDown decodeDown(const std::vector<uint8_t>& p, int nranks);
// The largest kUp or kDown payload a job of nranks can send.
size_t maxRoundPayload(int nranks);

}  // namespace conflux::bootstrap
