#include "common/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

#include "common/env.h"

namespace conflux::log {

namespace {

struct Sink {
  Level level = Level::kWarn;
  FILE* out = stderr;
  std::string host;
  std::mutex mu;  // serialises lines from several threads
};

Level parseLevel(const std::string& s) {
  if (s == "NONE") return Level::kNone;
  if (s == "VERSION") return Level::kVersion;
  if (s == "INFO") return Level::kInfo;
  if (s == "TRACE") return Level::kTrace;
  return Level::kWarn;
}

std::string expandPath(const std::string& pattern, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char c = pattern[++i];
      if (c == 'h') { out += host; continue; }
      if (c == 'p') { out += std::to_string(getpid()); continue; }
      out += '%';
      out += c;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

// Configured once from the environment; never changed afterwards.
Sink& sink() {
  static Sink* s = [] {
    auto* k = new Sink();
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    k->host = host;
    k->level = parseLevel(env::getString("CFX_DEBUG"));
    if (auto path = env::get("CFX_DEBUG_FILE")) {
      std::string p = expandPath(*path, k->host);
      if (FILE* f = std::fopen(p.c_str(), "a")) k->out = f;
    }
    return k;
  }();
  return *s;
}

const char* levelName(Level l) {
  switch (l) {
    case Level::kVersion: return "VERSION";
    case Level::kWarn: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kTrace: return "TRACE";
    default: return "";
  }
}

}  // namespace

bool enabled(Level level) { return level <= sink().level; }

void write(Level level, const char* file, int line, const std::string& message) {
  Sink& s = sink();
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  std::lock_guard<std::mutex> lock(s.mu);
  std::fprintf(s.out, "%s:%d:%ld CFX %s %s:%d %s\n", s.host.c_str(), getpid(), (long)syscall(SYS_gettid),
               levelName(level), base, line, message.c_str());
  std::fflush(s.out);
}

}  // namespace conflux::log
