#include "exporter/health.h"

#include <fmt/format.h>

namespace gpulse::exporter {

namespace {

std::string Name(const Entity& e) {
  std::string id =
      !e.uuid.empty() ? e.uuid : (!e.pci_bus_id.empty() ? e.pci_bus_id : "identity unknown");
  return fmt::format("GPU {} ({})", e.gpu, id);
}

// The GPUs' pending recommended actions (docs/faults.md): shown, not failing. A GPU fault is not
// the exporter's ill health, and failing a liveness probe for it would restart the exporter.
std::string PendingActions(const std::vector<Entity>& entities, const Snapshot& snap) {
  std::string out;
  for (std::size_t i = 0; i < snap.entities.size() && i < entities.size(); ++i) {
    const auto& a = snap.entities[i].sample.recommended_action;
    if (entities[i].kind != EntityKind::kGpu || !a || a->action == "NONE") continue;
    out += fmt::format("; {}: {} (Xid {}{}{})", Name(entities[i]), a->action, a->xid,
                       a->description.empty() ? "" : ": ", a->description);
  }
  return out.empty() ? out : "; recommended actions pending" + out;
}

}  // namespace

HealthVerdict EvaluateHealth(const SystemInfo& info, const std::vector<Entity>& entities,
                             const Snapshot* snap, std::int64_t now, std::int64_t staleness_ns,
                             std::optional<std::int64_t> in_flight_since) {
  if (in_flight_since && now - *in_flight_since > staleness_ns) {
    return {false, fmt::format("a device read has been running for {:.3f} s (limit {:.3f} s)",
                               (now - *in_flight_since) / 1e9, staleness_ns / 1e9)};
  }
  // A GPU lost before start is known without any read.
  for (const Entity& e : entities) {
    if (e.kind == EntityKind::kGpu && e.state == EntityState::kLost) {
      return {false, Name(e) + " is lost: " + e.reason};
    }
  }
  if (info.devices.empty()) return {false, "no GPU to read"};
  if (snap == nullptr) return {false, "no device read has completed yet"};
  if (now - snap->start_mono_ns > staleness_ns) {
    return {false, fmt::format("the last device read is {:.3f} s old (limit {:.3f} s)",
                               (now - snap->start_mono_ns) / 1e9, staleness_ns / 1e9)};
  }
  for (std::size_t i = 0; i < snap->entities.size() && i < entities.size(); ++i) {
    const DeviceReading& d = snap->entities[i];
    const Entity& e = entities[i];
    if (d.sample.state == DeviceState::kLost && e.kind == EntityKind::kGpu) {
      return {false, Name(e) + " is lost (the driver answered GPU_IS_LOST)"};
    }
    if (d.sample.profiling_stuck) {
      return {false, fmt::format("{} ({}): profiling reads 0 while the GPU is busy (stuck; "
                                 "gpulse_profiling_stuck)",
                                 EntityLabel(e), e.uuid)};
    }
    if (d.failed_calls > 0) {
      return {false, fmt::format("{} ({}): {} call(s) failed in the last read", EntityLabel(e),
                                 e.uuid, d.failed_calls)};
    }
  }
  return {true, "ok" + PendingActions(entities, *snap)};
}

}  // namespace gpulse::exporter
