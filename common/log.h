// Logging: CFX_DEBUG=NONE|VERSION|WARN|INFO|TRACE, CFX_DEBUG_FILE (with %h and %p). Lines are
// prefixed "host:pid:tid CFX LEVEL". The sink is configured once per process from the environment
// on first use and is immutable afterwards.
#pragma once

#include <cstdio>
#include <string>

namespace conflux::log {

enum class Level { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

bool enabled(Level level);
void write(Level level, const char* file, int line, const std::string& message);

}  // namespace conflux::log

// Formatting stays at the call site (std::string concatenation); these are plain function calls.
namespace conflux {
inline void logWarn(const std::string& m, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (log::enabled(log::Level::kWarn)) log::write(log::Level::kWarn, file, line, m);
}
inline void logInfo(const std::string& m, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (log::enabled(log::Level::kInfo)) log::write(log::Level::kInfo, file, line, m);
}
inline void logTrace(const std::string& m, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  if (log::enabled(log::Level::kTrace)) log::write(log::Level::kTrace, file, line, m);
}
}  // namespace conflux
