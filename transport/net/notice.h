#pragma once
// Abort notices: what a failing rank tells its peers before it closes its connections.
//
// A notice is either the sender's own failure, which the receiver attributes to the sender
// ("rank 4 (host 2 'a') failed: <text>"), or a root cause the sender only relays: it failed because
// another rank told it so. A relayed notice is passed on verbatim, so a failure keeps naming its
// origin however many ranks relay it, and the message does not grow with each hop (it must fit the
// bounded notice and the shared-memory poison message).
#include <string>

namespace conflux::net {

// The first byte of a relayed notice.
inline constexpr char kRelayMark = '\x02';

// The notice text to send: the root cause this rank received (relayed), if any, else its own `why`.
inline std::string noticeText(const std::string& why, const std::string& rootCause) {
  return rootCause.empty() ? why : std::string(1, kRelayMark) + rootCause;
}

// What a received notice means: the root cause (to relay if this rank fails in turn) and the
// message for this rank's pending operations, which also says who relayed it.
struct NoticeFailure {
  std::string root;
  std::string message;
};

// `sender` describes the rank the notice came from.
inline NoticeFailure noticeFailure(const std::string& text, const std::string& sender) {
  if (!text.empty() && text[0] == kRelayMark) {
    std::string root = text.substr(1);
    return {root, root + " (relayed by " + sender + ")"};
  }
  std::string root = sender + " failed: " + text;
  return {root, root};
}

}  // namespace conflux::net
