#include "exporter/json_api.h"

#include <nlohmann/json.hpp>

namespace gpulse::exporter {
namespace {

using nlohmann::json;

json Optional(const auto& v) { return v ? json(*v) : json(nullptr); }

bool Lost(const Snapshot* snap, std::size_t i) {
  return snap != nullptr && i < snap->entities.size() &&
         snap->entities[i].sample.state == DeviceState::kLost;
}

json Str(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

static json EntityJson(const Entity& e, bool lost_now) {
  bool lost = lost_now || e.state == EntityState::kLost;
  return {{"kind", EntityKindName(e.kind)},
          {"vendor", e.vendor},
          {"gpu", e.gpu},
          {"gpu_instance_id", Optional(e.gpu_instance_id)},
          {"compute_instance_id", Optional(e.compute_instance_id)},
          {"profile", Str(e.profile)},
          {"name", Str(e.name)},
          {"uuid", Str(e.uuid)},
          {"pci_bus_id", Str(e.pci_bus_id)},
          {"state", lost ? "lost" : EntityStateName(e.state)},
          {"reason", lost && e.reason.empty() ? json("the driver answered GPU_IS_LOST") : Str(e.reason)}};
}

std::string DevicesJson(const SystemInfo& info, const std::vector<Entity>& entities, const Snapshot* snap) {
  json devices = json::array();
  json all = json::array();
  for (std::size_t i = 0; i < entities.size(); ++i) all.push_back(EntityJson(entities[i], Lost(snap, i)));
  for (std::size_t i = 0; i < entities.size(); ++i) {
    if (entities[i].kind != EntityKind::kGpu || !entities[i].device_pos) continue;
    const DeviceInfo& d = info.devices[*entities[i].device_pos];
    json mig = json::array();
    for (const MigInstance& m : d.mig_instances) {
      mig.push_back({{"uuid", m.uuid},
                     {"profile", m.profile},
                     {"gpu_instance_id", m.gpu_instance_id},
                     {"compute_instance_id", m.compute_instance_id},
                     {"memory_total_bytes", Optional(m.memory_total_bytes)}});
    }
    devices.push_back({{"gpu", d.index},
                       {"uuid", d.uuid},
                       {"name", d.name},
                       {"pci_bus_id", d.pci_bus_id},
                       {"device", DeviceNode(d)},
                       {"vendor", VendorOf(d)},
                       {"memory_total_bytes", Optional(d.memory_total_bytes)},
                       {"power_limit_watts", Optional(d.power_limit_watts)},
                       {"mig_enabled", Optional(d.mig_enabled)},
                       {"mig_instances", mig},
                       {"lost", Lost(snap, i)}});
  }
  json skipped = json::array();
  for (const SkippedDevice& s : info.skipped) {
    skipped.push_back({{"gpu", s.index},
                       {"reason", s.reason},
                       {"lost", s.lost},
                       {"uuid", Str(s.uuid)},
                       {"pci_bus_id", Str(s.pci_bus_id)},
                       {"identity_source", Str(s.identity_source)}});
  }
  json out = {{"backend", info.backend},
              {"driver_version", Optional(info.driver_version)},
              {"nvml_version", Optional(info.library_version)},
              {"simulated", info.simulated},
              {"scenario", info.simulated ? json(info.scenario) : json(nullptr)},
              {"devices", devices},
              {"skipped", skipped},
              {"entities", all}};
  return out.dump(2) + "\n";
}

std::string SnapshotJson(const SystemInfo& info, const std::vector<Entity>& entities,
                         const CounterSet& counters, const Snapshot& snap, std::int64_t now_mono_ns,
                         std::int64_t now_unix_ns) {
  json devices = json::array();
  for (std::size_t i = 0; i < entities.size() && i < snap.entities.size(); ++i) {
    const Entity& e = entities[i];
    const Sample& s = snap.entities[i].sample;
    bool lost = s.state == DeviceState::kLost || e.state == EntityState::kLost;
    // GPUs and GPU instances, and GPUs lost before start; not compute instances (no readings).
    if (!e.readable() && !(e.kind == EntityKind::kGpu && lost)) continue;
    json fields = json::object();
    for (const Counter& c : counters.counters) {
      std::optional<double> v;
      if (!lost && c.field < s.values.size()) v = s.values[c.field];
      fields[c.name] = Optional(v);
    }
    json xids = json::array();
    for (const XidCount& x : s.xid_counts) xids.push_back({{"xid", x.xid}, {"count", x.count}});
    double age = (now_mono_ns - s.t_mono_ns) / 1e9;
    devices.push_back({{"gpu", e.gpu},
                       {"uuid", Str(e.uuid)},
                       {"kind", EntityKindName(e.kind)},
                       {"gpu_instance_id", Optional(e.gpu_instance_id)},
                       {"profile", Str(e.profile)},
                       {"state", lost ? "lost" : "ok"},
                       {"timestamp_unix", s.t_unix_ns / 1e9},
                       {"age_seconds", lost ? json(nullptr) : json(age)},
                       {"failed_calls", snap.entities[i].failed_calls},
                       {"fields", fields},
                       {"xid_errors", xids}});
  }
  json out = {{"timestamp_unix", now_unix_ns / 1e9},
              {"read_duration_seconds", snap.duration_ns / 1e9},
              {"simulated", info.simulated},
              {"devices", devices}};
  return out.dump(2) + "\n";
}

}  // namespace gpulse::exporter
