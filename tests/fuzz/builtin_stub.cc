// The fuzz build compiles the scenario parser without the simulator's embedded built-in scenarios
// (sim/embed_scenarios.cmake generates them for the shared library): the fuzz target parses text,
// it never looks a built-in up by name.
#include "builtin_scenarios.h"

namespace gpulse::sim {

std::span<const BuiltinScenario> BuiltinScenarios() { return {}; }

}  // namespace gpulse::sim
