// The one registry of Conflux's environment variables. Every variable the library reads is listed
// in env.cc with its default and a description; reading an unlisted name is a programming error.
// Values are read on demand (never cached in globals), so tests can change them between calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace conflux::env {

struct Variable {
  const char* name;
  const char* defaultValue;  // nullptr: unset by default
  const char* description;
};

// All registered variables, in documentation order.
const std::vector<Variable>& registry();

// The raw value, or the registered default; std::nullopt when unset and without default.
std::optional<std::string> get(const char* name);
std::string getString(const char* name);
// Integer value; throws Error(kInvalidArgument) naming the variable if it does not parse.
int64_t getInt(const char* name);
double getDouble(const char* name);

// Not registered: variables of other launchers (torchrun, Open MPI, Slurm), read as-is.
std::optional<std::string> getForeign(const char* name);

}  // namespace conflux::env
