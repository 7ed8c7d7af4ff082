// /health: healthy only when no GPU is lost (before or after start), the last read of every
// entity succeeded, and that read is recent. Unlike dcgm-exporter's always-200 /health, a frozen or failing reader makes it fail,
// so a liveness probe can restart the exporter (dcgm-exporter#164, gmt#188). A healthy answer
// names the GPUs' pending recommended actions (docs/faults.md) after "ok"; they never fail it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/snapshot.h"

namespace gpulse::exporter {

struct HealthVerdict {
  bool healthy = false;
  std::string reason;  // one line; "ok" when healthy
};

// `snap` is the read made for this check (nullptr when none has completed); `in_flight_since_ns`
// is when the read in progress started, if one is. A read in progress for longer than
// `staleness_ns`, or a snapshot older than it, is unhealthy.
// `entities` is BuildEntities(info), parallel to snap->entities.
HealthVerdict EvaluateHealth(const SystemInfo& info, const std::vector<Entity>& entities,
                             const Snapshot* snap, std::int64_t now_mono_ns,
                             std::int64_t staleness_ns,
                             std::optional<std::int64_t> in_flight_since_ns);

}  // namespace gpulse::exporter
