// /api/v1/devices and /api/v1/snapshot: the same data as /metrics for programs that want JSON.
// Contracts: docs/schema/exporter-devices.schema.json and exporter-snapshot.schema.json.
#pragma once

#include <cstdint>
#include <string>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/counters.h"
#include "exporter/snapshot.h"

namespace gpulse::exporter {

// The GPUs being exported (identity, MIG instances, skipped devices), with their lost state from
// `snap` when given.
std::string DevicesJson(const SystemInfo& info, const std::vector<Entity>& entities, const Snapshot* snap);

// The readings of `snap` for the counters' fields: one object per device, absent readings null.
std::string SnapshotJson(const SystemInfo& info, const std::vector<Entity>& entities,
                         const CounterSet& counters, const Snapshot& snap,
                         std::int64_t now_mono_ns, std::int64_t now_unix_ns);

}  // namespace gpulse::exporter
