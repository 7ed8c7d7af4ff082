#include "identity/environment.h"

namespace gpulse::identity {

Environment Environment::FromEntries(std::span<const std::string> entries) {
  Environment env;
  for (const std::string& entry : entries) {
    std::size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.vars_[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

std::optional<std::string_view> Environment::Get(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace gpulse::identity
