#include "flight/dump.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <atomic>
#include <mutex>

#include "common/env.h"
#include "common/log.h"
#include "common/never_freed.h"
#include "reduce/kernels.h"

namespace conflux::flight {

namespace {

std::string jsonString(const std::string& s) {
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

std::string hex16(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string msAgo(int64_t nowNs, int64_t t) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", static_cast<double>(nowNs - t) / 1e6);
  return buf;
}

std::string ranksText(const std::vector<int>& ranks) {
  std::string s;
  for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// "#42 AllReduce (count 1000 float32 sum)", "Send #3 to rank 1 (4096 bytes)".
std::string callText(const Record& r) {
  const Call& c = r.call;
  if (c.p2p) {
    return std::string(c.name) + " #" + std::to_string(r.seq) + (c.isRecv ? " from rank " : " to rank ") +
           std::to_string(c.root) + " (" + std::to_string(c.count) + " bytes)";
  }
  std::string s = "#" + std::to_string(r.seq) + " " + c.name + " (count " + std::to_string(c.count);
  if (c.datatype >= 0) s += std::string(" ") + reduce::dataTypeName(static_cast<cfxDataType_t>(c.datatype));
  if (c.redop >= 0) s += std::string(" ") + reduce::redOpName(static_cast<cfxRedOp_t>(c.redop));
  if (c.root >= 0) s += " root " + std::to_string(c.root);
  return s + ")";
}

// The process's live recorders. Never freed (a dump may be requested until the process exits).
struct Process {
  std::mutex mu;
  std::vector<const Recorder*> live;
  std::once_flag signalOnce;
};

Process& process() {
  static Process* p = [] {
    auto* q = new Process();
    neverFreed(q);
    return q;
  }();
  return *p;
}

// SIGUSR1 requests a dump; the next Conflux call or waking wait of the process serves it.
// Constant-initialised and lock-free, so the handler may touch them.
std::atomic<uint64_t> dumpsRequested{0};
std::atomic<uint64_t> dumpsServed{0};

void onSignal(int) { dumpsRequested.fetch_add(1, std::memory_order_relaxed); }

void installSignal() {
  if (env::getString("CFX_DUMP_SIGNAL") == "0") return;
  struct sigaction old {};
  if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

std::string hostname() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// Writes the file (through a temporary name, so a reader never sees half of it). Holds p.mu.
void writeFile(const std::vector<const Recorder*>& recs, const std::string& why) {
  auto dir = env::get("CFX_DEBUG_DUMP_DIR");
  if (!dir) return;
  const int64_t now = Recorder::now();
  std::string json = "{\"host\": " + jsonString(hostname()) + ", \"pid\": " + std::to_string(getpid()) +
                     ", \"reason\": " + jsonString(why) + ", \"unixTime\": " + std::to_string(std::time(nullptr)) +
                     ", \"communicators\": [";
  for (size_t i = 0; i < recs.size(); ++i) json += (i ? ",\n" : "\n") + toJson(*recs[i], now);
  json += "\n]}\n";
  const std::string path = *dir + "/" + hostname() + "." + std::to_string(getpid()) + ".json";
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    logWarn("flight recorder: cannot write " + tmp + ": " + std::strerror(errno));
    return;
  }
  bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    logWarn("flight recorder: cannot write " + path + ": " + std::strerror(errno));
    return;
  }
  logWarn("flight recorder: wrote " + path);
}

}  // namespace

std::string toJson(const Recorder& r, int64_t nowNs) {
  const Identity& who = r.identity();
  std::string s = "{\"commHash\": \"" + hex16(who.commHash) + "\", \"rank\": " + std::to_string(who.rank) +
                  ", \"nranks\": " + std::to_string(who.nranks) + ", \"hostname\": " + jsonString(who.host) +
                  ", \"hostIndex\": " + std::to_string(who.hostIndex) + ", \"failure\": " + jsonString(r.failure()) +
                  ", \"ops\": [";
  bool first = true;
  for (const Record& rec : r.snapshot()) {
    s += first ? "\n  " : ",\n  ";
    first = false;
    const Call& c = rec.call;
    s += "{\"id\": " + std::to_string(rec.id) + ", \"seq\": " + std::to_string(rec.seq) +
         ", \"op\": " + jsonString(c.name) + ", \"p2p\": " + (c.p2p ? "true" : "false") +
         ", \"count\": " + std::to_string(c.count);
    if (c.datatype >= 0) s += ", \"datatype\": " + jsonString(reduce::dataTypeName(static_cast<cfxDataType_t>(c.datatype)));
    if (c.redop >= 0) s += ", \"redop\": " + jsonString(reduce::redOpName(static_cast<cfxRedOp_t>(c.redop)));
    if (c.root >= 0) s += std::string(c.p2p ? ", \"peer\": " : ", \"root\": ") + std::to_string(c.root);
    s += std::string(", \"state\": \"") + stateName(rec.state) + "\"";
    s += ", \"queuedMsAgo\": " + msAgo(nowNs, rec.queuedNs);
    s += std::string(", \"ran\": ") + (rec.ran ? "true" : "false");
    if (rec.endedNs) s += ", \"endedMsAgo\": " + msAgo(nowNs, rec.endedNs);
    if (!rec.detail.empty()) {
      s += ", \"waitingFor\": [" + ranksText(rec.waitingFor) + "], \"detail\": " + jsonString(rec.detail);
    }
    s += "}";
  }
  return s + "]}";
}

std::vector<std::string> summary(const Recorder& r, int64_t nowNs) {
  const Identity& who = r.identity();
  const std::string head = "flight recorder: comm " + hex16(who.commHash) + " rank " + std::to_string(who.rank) + "/" +
                           std::to_string(who.nranks) + " (host " + std::to_string(who.hostIndex) + " '" + who.host +
                           "', pid " + std::to_string(getpid()) + "): ";
  std::vector<Record> recs = r.snapshot();
  const Record* lastDone = nullptr;
  std::vector<const Record*> open;
  for (const Record& rec : recs) {
    if (rec.state == State::kDone) {
      if (!rec.call.p2p) lastDone = &rec;
    } else {
      open.push_back(&rec);
    }
  }
  std::vector<std::string> lines;
  lines.push_back(head + "last completed collective " + (lastDone ? callText(*lastDone) : std::string("none")) + "; " +
                  std::to_string(open.size()) + " operation(s) not completed");
  constexpr size_t kShown = 4;
  for (size_t i = 0; i < open.size() && i < kShown; ++i) {
    const Record& rec = *open[i];
    std::string l = head + callText(rec) + " " + stateName(rec.state) + ", queued " + msAgo(nowNs, rec.queuedNs) +
                    " ms ago";
    if (!rec.detail.empty()) l += ", waiting for rank(s) " + ranksText(rec.waitingFor) + ": " + rec.detail;
    lines.push_back(l);
  }
  if (open.size() > kShown) lines.push_back(head + "and " + std::to_string(open.size() - kShown) + " more");
  return lines;
}

Registration::Registration(const Recorder* r) : r_(r) {
  Process& p = process();
  std::call_once(p.signalOnce, installSignal);
  std::lock_guard<std::mutex> lock(p.mu);
  p.live.push_back(r_);
}

Registration::~Registration() {
  Process& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  p.live.erase(std::remove(p.live.begin(), p.live.end(), r_), p.live.end());
}

void dumpOnFailure(const Recorder& r) {
  const int64_t now = Recorder::now();
  for (const std::string& l : summary(r, now)) logWarn(l);
  Process& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  writeFile(p.live, "failure of comm " + hex16(r.identity().commHash) + " rank " + std::to_string(r.identity().rank) +
                        ": " + r.failure());
}

void dumpIfRequested() {
  uint64_t served = dumpsServed.load(std::memory_order_relaxed);
  const uint64_t requested = dumpsRequested.load(std::memory_order_relaxed);
  if (requested == served) return;
  if (dumpsServed.compare_exchange_strong(served, requested, std::memory_order_relaxed)) dumpProcess("SIGUSR1");
}

void dumpProcess(const std::string& why) {
  Process& p = process();
  std::lock_guard<std::mutex> lock(p.mu);
  const int64_t now = Recorder::now();
  for (const Recorder* r : p.live) {
    for (const std::string& l : summary(*r, now)) logWarn(l + " [" + why + "]");
  }
  writeFile(p.live, why);
}

}  // namespace conflux::flight
