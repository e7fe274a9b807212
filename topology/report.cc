#include "topology/report.h"

#include <cstdio>

namespace conflux::topology {

namespace {

std::string gbpsText(const std::optional<double>& g) {
  if (!g) return "speed unknown";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g Gbit/s", *g);
  return buf;
}

std::string numaText(int id) { return id < 0 ? "no NUMA node" : "NUMA " + std::to_string(id); }

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string intList(const std::vector<int>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

std::string numaJson(int id) { return id < 0 ? "null" : std::to_string(id); }

}  // namespace

std::vector<std::string> describeTopology(const Topology& t) {
  std::vector<std::string> out;
  size_t cpus = 0;
  for (const auto& n : t.numa) cpus += n.cpus.size();
  out.push_back("topology: " + t.source + ": " + std::to_string(t.packageCount()) + " package(s), " +
                std::to_string(t.numa.size()) + " NUMA node(s), " + std::to_string(cpus) + " CPUs, " +
                std::to_string(t.gpus.size()) + " GPU(s), " + std::to_string(t.nics.size()) + " NIC(s)");
  for (const auto& n : t.numa) {
    std::string mem = n.memoryBytes ? ", " + std::to_string(n.memoryBytes >> 30) + " GiB" : "";
    out.push_back("  NUMA " + std::to_string(n.id) + " (package " + std::to_string(n.package) + mem + "): " +
                  std::to_string(n.cores.size()) + " cores, CPUs " + (n.cpus.empty() ? "none" : cpuList(n.cpus)));
  }
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const Gpu& g = t.gpus[i];
    out.push_back("  GPU " + std::to_string(i) + ": " + g.name + " at " + g.pci + ", " + numaText(g.numa));
  }
  for (const auto& n : t.nics) {
    out.push_back("  NIC " + n.name + ": " + nicKindName(n.kind) + ", " + gbpsText(n.gbps) + ", at " + n.pci + ", " +
                  numaText(n.numa));
  }
  return out;
}

std::string describeRank(const Topology& t, const RankPlan& r) {
  std::string s = "local rank " + std::to_string(r.localRank) + ": NUMA " + std::to_string(r.numa) + ", CPUs " +
                  (r.cpus.empty() ? std::string("not bound") : cpuList(r.cpus));
  s += ", GPU " + (r.gpu >= 0 ? std::to_string(r.gpu) + " (" + t.gpus[r.gpu].pci + ")" : std::string("none"));
  s += ", NIC " + (r.nic >= 0 ? t.nics[r.nic].name : std::string("none"));
  return s;
}

std::vector<std::string> describePlan(const Topology& t, const Plan& p) {
  std::vector<std::string> out;
  std::string head = "plan for " + std::to_string(p.localRanks) + " local rank(s): bind " + bindName(p.bind) +
                     ", reduction " + reductionName(p.reduction);
  if (p.reduction == Reduction::kTwoLevel) {
    head += " (";
    for (size_t g = 0; g < p.groups.size(); ++g) {
      std::string ranks;
      for (int r : p.groups[g]) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      head += (g ? "; " : "") + std::string("NUMA ") + std::to_string(p.groupNuma[g]) + ": ranks " + ranks;
    }
    head += ")";
  }
  head += p.placeMemory ? ", staging buffers on NUMA " + std::to_string(p.stagingNuma)
                        : ", memory placement off (one NUMA node)";
  out.push_back(head);
  for (const auto& r : p.ranks) out.push_back("  " + describeRank(t, r));
  return out;
}

std::string toJson(const Topology& t, const Plan& p) {
  std::string j = "{\"source\":" + quoted(t.source) + ",\"numa\":[";
  for (size_t i = 0; i < t.numa.size(); ++i) {
    const NumaNode& n = t.numa[i];
    j += std::string(i ? "," : "") + "{\"id\":" + std::to_string(n.id) + ",\"package\":" + std::to_string(n.package) +
         ",\"memory_bytes\":" + std::to_string(n.memoryBytes) + ",\"cores\":" + intList(n.cpus) + "}";
  }
  j += "],\"gpus\":[";
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const Gpu& g = t.gpus[i];
    j += std::string(i ? "," : "") + "{\"name\":" + quoted(g.name) + ",\"pci\":" + quoted(g.pci) +
         ",\"numa\":" + numaJson(g.numa) + "}";
  }
  j += "],\"nics\":[";
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const Nic& n = t.nics[i];
    char gbps[32] = "null";
    if (n.gbps) std::snprintf(gbps, sizeof(gbps), "%g", *n.gbps);
    j += std::string(i ? "," : "") + "{\"name\":" + quoted(n.name) + ",\"kind\":" + quoted(nicKindName(n.kind)) +
         ",\"pci\":" + quoted(n.pci) + ",\"numa\":" + numaJson(n.numa) + ",\"gbps\":" + gbps + "}";
  }
  j += "],\"plan\":{\"local_ranks\":" + std::to_string(p.localRanks) + ",\"bind\":" + quoted(bindName(p.bind)) +
       ",\"reduction\":" + quoted(reductionName(p.reduction)) + ",\"groups\":[";
  for (size_t g = 0; g < p.groups.size(); ++g) {
    j += std::string(g ? "," : "") + "{\"numa\":" + std::to_string(p.groupNuma[g]) + ",\"ranks\":" + intList(p.groups[g]) + "}";
  }
  j += "],\"staging_numa\":" + std::to_string(p.stagingNuma) +
       ",\"place_memory\":" + (p.placeMemory ? "true" : "false") + ",\"ranks\":[";
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    const RankPlan& r = p.ranks[i];
    j += std::string(i ? "," : "") + "{\"local_rank\":" + std::to_string(r.localRank) +
         ",\"numa\":" + std::to_string(r.numa) + ",\"cores\":" + intList(r.cpus) +
         ",\"gpu\":" + (r.gpu >= 0 ? quoted(t.gpus[r.gpu].pci) : "null") +
         ",\"nic\":" + (r.nic >= 0 ? quoted(t.nics[r.nic].name) : "null") + "}";
  }
  return j + "]}}";
}

}  // namespace conflux::topology
