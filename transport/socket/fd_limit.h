// The open-files limit (RLIMIT_NOFILE) against what a rank's connections need. A full mesh over
// TCP holds CFX_NSOCKS + 1 sockets per remote rank: past a few hundred ranks that exceeds the
// common soft limit of 1024, and connect or accept would fail with EMFILE part way through.
#pragma once

#include <cstddef>
#include <string>

namespace conflux::net {

// Makes room for `more` descriptors beyond those open now (and some slack): raises the soft limit
// towards the hard one when needed. Returns what it did, for INFO, or empty when nothing was
// needed. Throws Error(kSystemError) naming `what`, the count and both limits when even the hard
// limit is too low.
std::string reserveDescriptors(size_t more, const std::string& what);

// This process's open file descriptors (from /proc/self/fd; 0 where that cannot be read).
size_t openDescriptors();

}  // namespace conflux::net
