// The environment a workload sees, as name → value. Built from "NAME=value" entries: the current
// process's own (sys::CurrentEnvironment) or another's exec-time environment (sys::ReadEnviron).
// An unset variable and one set to "" are different things (CUDA_VISIBLE_DEVICES="" hides every
// GPU), so Get distinguishes them.
//
// Thread-safety: immutable after construction.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpulse::identity {

class Environment {
 public:
  Environment() = default;
  // Later entries win, as with execve; an entry without '=' is ignored.
  static Environment FromEntries(std::span<const std::string> entries);

  // nullopt when unset; "" when set to the empty string.
  std::optional<std::string_view> Get(std::string_view name) const;
  void Set(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

}  // namespace gpulse::identity
