// Configuration targets (DCGM's `dcgmi config`): the settings an operator wants a group's GPUs to
// have. Declarative: the agent applies a target when it is set, after a GPU reset and when the
// agent starts, and `--enforce` applies it again. Pure: checks and differences; the agent calls
// the backend.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/result.h"

namespace gpulse::health {

struct ConfigTarget {
  std::optional<int> compute_mode;  // 0 unrestricted, 2 prohibited, 3 exclusive process
  std::optional<bool> ecc;
  std::optional<bool> sync_boost;  // never supported (NVML has no call): refused when set
  std::optional<unsigned> app_mem_clock_mhz;  // application clocks: both or neither
  std::optional<unsigned> app_sm_clock_mhz;
  std::optional<double> power_limit_w;

  bool empty() const;
};

// The JSON of the config API (docs/schema/agent-config.schema.json): every member checked.
Result<ConfigTarget> ConfigFromJson(const nlohmann::json& j);
nlohmann::json ConfigToJson(const ConfigTarget& t);
// `later` over `earlier`: each setting `later` names replaces `earlier`'s.
ConfigTarget MergeTargets(const ConfigTarget& earlier, const ConfigTarget& later);

// Checks `t` against what GPU `gpu` allows (`s`, read now): an error names the setting, the value
// and the allowed range or values. A setting the GPU does not report is refused as unsupported.
Status CheckTarget(const ConfigTarget& t, const DeviceSettings& s, unsigned gpu);

enum class ConfigSetting { kComputeMode, kEcc, kAppClocks, kPowerLimit };
// The settings of `t` whose current value (`s`) differs from the target.
std::vector<ConfigSetting> Differences(const ConfigTarget& t, const DeviceSettings& s);

// dcgmi's names for compute modes ("Unrestricted", "Prohibited", "E. Process"); "" unknown.
std::string ComputeModeName(int mode);

}  // namespace gpulse::health
