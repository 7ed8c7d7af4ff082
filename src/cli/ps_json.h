// The JSON document of `gpulse ps --json` (docs/schema/ps.schema.json).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/device.h"
#include "identity/attribution.h"

namespace gpulse::cli {

// `procfs_root`: the tree processes were read from, nullopt when none was (simulated PIDs).
nlohmann::json PsDocument(const SystemInfo& info, const identity::PsReport& report,
                          const std::optional<std::string>& procfs_root);

}  // namespace gpulse::cli
