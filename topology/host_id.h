// The identity of the host a process runs on: hostname, boot id and network namespace, so that
// network namespaces used as test hosts count as separate hosts. CFX_HOST_ID overrides it.
#pragma once

#include <string>

namespace conflux::topology {

std::string hostId();

}  // namespace conflux::topology
