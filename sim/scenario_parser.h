// Scenario YAML → validated Scenario (format: sim/README.md), the GPULSE_SIM_SCENARIO lookup (a
// built-in name or a file path), and one injected fault's YAML → Fault.
//
// Thread-safety: pure functions; no shared state.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "scenario.h"

namespace gpulse::sim {

// Parses and validates `text`. `source` names the text in error messages (a path, or "built-in
// scenario 'faults'"); `default_name` is the scenario name when the text has no `name` key. An
// error message names the source, the line and column, the key path and the problem.
Result<Scenario> ParseScenario(std::string_view text, const std::string& source,
                               const std::string& default_name);

// Parses one fault injected at run time (gpulseSimInjectFault) into GPU `device` (REQUIRES: <
// devices.size()) at simulator time `now`: a YAML map in the grammar of a `faults:` entry without
// `device` and `at`, with `duration_s` instead of `until` (sim/README.md, "Injecting faults at run
// time"). Errors read "injected fault:LINE:COLUMN: key: problem", with the scenario parser's
// texts.
Result<Fault> ParseInjectedFaultText(std::string_view text, const std::vector<DeviceSpec>& devices,
                                     unsigned device, double now);

// Loads the scenario `selector` names: a built-in scenario (embedded at build time) or else a path
// to a YAML file. `selector` null or empty is an error that says how to set GPULSE_SIM_SCENARIO.
Result<Scenario> LoadScenario(const char* selector);

}  // namespace gpulse::sim
