#include "exporter/json_api.h"

#include <nlohmann/json.hpp>

namespace gpulse::exporter {
namespace {

using nlohmann::json;

json Optional(const auto& v) { return v ? json(*v) : json(nullptr); }

bool Lost(const Snapshot* snap, std::size_t i) {
  return snap != nullptr && i < snap->devices.size() &&
         snap->devices[i].sample.state == DeviceState::kLost;
}

}  // namespace

std::string DevicesJson(const SystemInfo& info, const Snapshot* snap) {
  json devices = json::array();
  for (std::size_t i = 0; i < info.devices.size(); ++i) {
    const DeviceInfo& d = info.devices[i];
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
                       {"device", "nvidia" + std::to_string(d.index)},
                       {"memory_total_bytes", Optional(d.memory_total_bytes)},
                       {"power_limit_watts", Optional(d.power_limit_watts)},
                       {"mig_enabled", Optional(d.mig_enabled)},
                       {"mig_instances", mig},
                       {"lost", Lost(snap, i)}});
  }
  json skipped = json::array();
  for (const SkippedDevice& s : info.skipped)
    skipped.push_back({{"gpu", s.index}, {"reason", s.reason}});
  json out = {{"backend", info.backend},
              {"driver_version", Optional(info.driver_version)},
              {"nvml_version", Optional(info.library_version)},
              {"simulated", info.simulated},
              {"scenario", info.simulated ? json(info.scenario) : json(nullptr)},
              {"devices", devices},
              {"skipped", skipped}};
  return out.dump(2) + "\n";
}

std::string SnapshotJson(const SystemInfo& info, const CounterSet& counters, const Snapshot& snap,
                         std::int64_t now_mono_ns, std::int64_t now_unix_ns) {
  json devices = json::array();
  for (std::size_t i = 0; i < info.devices.size() && i < snap.devices.size(); ++i) {
    const Sample& s = snap.devices[i].sample;
    bool lost = s.state == DeviceState::kLost;
    json fields = json::object();
    for (const Counter& c : counters.counters) {
      std::optional<double> v;
      if (!lost && c.field < s.values.size()) v = s.values[c.field];
      fields[c.name] = Optional(v);
    }
    json xids = json::array();
    for (const XidCount& x : s.xid_counts) xids.push_back({{"xid", x.xid}, {"count", x.count}});
    double age = (now_mono_ns - s.t_mono_ns) / 1e9;
    devices.push_back({{"gpu", info.devices[i].index},
                       {"uuid", info.devices[i].uuid},
                       {"state", lost ? "lost" : "ok"},
                       {"timestamp_unix", s.t_unix_ns / 1e9},
                       {"age_seconds", lost ? json(nullptr) : json(age)},
                       {"failed_calls", snap.devices[i].failed_calls},
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
