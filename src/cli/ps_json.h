// The JSON document of `gpulse ps --json` (docs/schema/ps.schema.json).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/device.h"
#include "identity/attribution.h"
#include "identity/pod_resources.h"

namespace gpulse::cli {

// Pod names from the kubelet (`gpulse ps` with its pod-resources socket), or why there are none.
struct PsPodNames {
  identity::PodNaming naming;
  std::string unavailable;  // why the kubelet was not asked or did not answer ("" when it did)
};

// `procfs_root`: the tree processes were read from, nullopt when none was (simulated PIDs).
nlohmann::json PsDocument(const SystemInfo& info, const identity::PsReport& report,
                          const std::optional<std::string>& procfs_root,
                          const PsPodNames& names = {});

}  // namespace gpulse::cli
