#include "transport/net/ifaces.h"

#include <ifaddrs.h>
#include <net/if.h>

#include <cstring>

#include "common/env.h"
#include "common/error.h"

namespace conflux::net {

std::vector<Iface> listInterfaces() {
  std::vector<Iface> v4, v6;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throwSystemError("getifaddrs", errno);
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    Iface f;
    f.name = i->ifa_name;
    f.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    size_t len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (fam == AF_INET6) {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) continue;  // needs a scope id: not worth it
    }
    std::memcpy(&f.addr.storage, i->ifa_addr, len);
    f.addr.len = static_cast<socklen_t>(len);
    (fam == AF_INET ? v4 : v6).push_back(f);
  }
  freeifaddrs(list);
  v4.insert(v4.end(), v6.begin(), v6.end());
  return v4;
}

std::vector<Iface> selectInterfaces(const std::vector<Iface>& all, const IfaceFilter& filter) {
  std::vector<Iface> out;
  for (const auto& i : all) {
    if (!filter.empty()) {
      if (filter.matches(i.name)) out.push_back(i);
      continue;
    }
    bool skipped = i.loopback || i.name.rfind("docker", 0) == 0 || i.name.rfind("veth", 0) == 0;
    if (!skipped) out.push_back(i);
  }
  if (out.empty() && filter.empty()) {
    for (const auto& i : all) {
      if (i.loopback) out.push_back(i);
    }
  }
  return out;
}

Iface chooseInterface(const std::string& preferred) {
  std::string spec = env::getString("CFX_SOCKET_IFNAME");
  auto all = listInterfaces();
  auto chosen = selectInterfaces(all, IfaceFilter::parse(spec));
  if (chosen.empty()) {
    std::string names;
    for (const auto& i : all) names += (names.empty() ? "" : ", ") + i.name;
    throw Error(Status::kInvalidArgument, "no network interface matches CFX_SOCKET_IFNAME='" + spec +
                                              "' (interfaces up: " + (names.empty() ? "none" : names) + ")");
  }
  for (const auto& i : chosen) {
    if (!preferred.empty() && i.name == preferred) return i;
  }
  return chosen.front();
}

}  // namespace conflux::net
