#include "common/name_filter.h"

namespace conflux {

NameFilter NameFilter::parse(const std::string& spec) {
  NameFilter f;
  std::string s = spec;
  if (!s.empty() && s[0] == '^') {
    f.exclude = true;
    s.erase(0, 1);
  }
  if (!s.empty() && s[0] == '=') {
    f.exact = true;
    s.erase(0, 1);
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string name = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = name.find(':');
    if (colon != std::string::npos) name.erase(colon);
    if (!name.empty()) f.names.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return f;
}

bool NameFilter::matches(const std::string& name) const {
  bool hit = false;
  for (const auto& n : names) {
    if (exact ? name == n : name.rfind(n, 0) == 0) {
      hit = true;
      break;
    }
  }
  return exclude ? !hit : hit;
}

}  // namespace conflux
