// The built-in scenarios: the texts of sim/scenarios/*.yaml, embedded into the library at build
// time (sim/embed_scenarios.cmake generates the definition), so nothing is looked up on disk at run
// time.
//
// Thread-safety: immutable static data.
#pragma once

#include <span>
#include <string_view>

namespace gpulse::sim {

struct BuiltinScenario {
  std::string_view name;  // the file name without ".yaml"
  std::string_view yaml;
};

// Sorted by name.
std::span<const BuiltinScenario> BuiltinScenarios();

}  // namespace gpulse::sim
