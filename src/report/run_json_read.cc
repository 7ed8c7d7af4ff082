// Reading run.json back into a Run (see run_json.h). nlohmann throws on type mismatches; those are
// caught here and become an error value naming the file and the JSON path.
#include <limits>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "report/run_json.h"
#include "report/run_json_parts.h"
#include "sys/regular_file.h"

namespace gpulse::report {
namespace {

using nlohmann::json;

template <typename T>
std::optional<T> OptGet(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return JsonGet<T>(*it);
}

RunInfo ParseRunInfo(const json& r) {
  RunInfo i;
  i.command = JsonGet<std::vector<std::string>>(r.at("command"));
  i.pid = OptGet<std::int64_t>(r, "pid").value_or(0);
  i.complete = OptGet<bool>(r, "complete").value_or(true);
  i.incomplete_reason = OptGet<std::string>(r, "incomplete_reason");
  i.start_unix_ns = JsonGet<std::int64_t>(r.at("start_unix_ns"));
  i.end_unix_ns = JsonGet<std::int64_t>(r.at("end_unix_ns"));
  i.duration_ns = JsonGet<std::int64_t>(r.at("duration_ns"));
  i.exit_code = OptGet<int>(r, "exit_code");
  i.exit_signal = OptGet<int>(r, "exit_signal");
  i.gpulse_exit_code = JsonGet<int>(r.at("gpulse_exit_code"));
  i.sample_period_ns = JsonGet<std::int64_t>(r.at("sample_period_ns"));
  i.include_descendants = JsonGet<bool>(r.at("include_descendants"));
  i.simulated = JsonGet<bool>(r.at("simulated"));
  i.scenario = OptGet<std::string>(r, "scenario").value_or("");
  i.host = JsonGet<std::string>(r.at("host"));
  i.gpulse_version = JsonGet<std::string>(r.at("gpulse_version"));
  i.driver_version = OptGet<std::string>(r, "driver_version");
  i.gpu_unavailable_reason = OptGet<std::string>(r, "gpu_unavailable_reason");
  i.cuda_visible_devices = OptGet<std::string>(r, "cuda_visible_devices");
  i.device_selection = JsonGet<std::string>(r.at("device_selection"));
  i.process_sampling_end_reason = OptGet<std::string>(r, "process_sampling_end_reason");
  i.skipped_ticks = JsonGet<std::int64_t>(r.at("skipped_ticks"));
  return i;
}

DeviceInfo ParseDevice(const json& d) {
  DeviceInfo i;
  i.index = JsonGet<unsigned>(d.at("index"));
  i.name = JsonGet<std::string>(d.at("name"));
  i.uuid = JsonGet<std::string>(d.at("uuid"));
  i.pci_bus_id = JsonGet<std::string>(d.at("pci_bus_id"));
  i.memory_total_bytes = OptGet<std::uint64_t>(d, "memory_total_bytes");
  i.power_limit_watts = OptGet<double>(d, "power_limit_watts");
  i.mig_enabled = OptGet<bool>(d, "mig_enabled");
  return i;
}

GpuSample ParseSample(const json& s) {
  GpuSample g;
  g.elapsed_ns = JsonGet<std::int64_t>(s.at("elapsed_ns"));
  g.device_index = JsonGet<std::uint32_t>(s.at("device_index"));
  auto extra = [&](GpuSample::Extra e, const char* key, auto& field) {
    if (auto v = OptGet<std::remove_reference_t<decltype(field)>>(s, key)) {
      field = *v;
      g.present |= e;
    }
  };
  // The ADR-007 readings are keys of every sample (null when absent; never null in version 1).
  for (const char* key : {"memory_used_bytes", "memory_total_bytes", "utilization_percent",
                          "temperature_celsius", "power_draw_milliwatts"}) {
    (void)s.at(key);
  }
  extra(GpuSample::kMemoryUsed, "memory_used_bytes", g.memory_used_bytes);
  extra(GpuSample::kMemoryTotal, "memory_total_bytes", g.memory_total_bytes);
  extra(GpuSample::kUtilization, "utilization_percent", g.utilization_percent);
  extra(GpuSample::kTemperature, "temperature_celsius", g.temperature_celsius);
  extra(GpuSample::kPower, "power_draw_milliwatts", g.power_draw_milliwatts);
  extra(GpuSample::kMemoryUtilization, "memory_utilization_percent", g.memory_utilization_percent);
  extra(GpuSample::kSmClock, "sm_clock_mhz", g.sm_clock_mhz);
  extra(GpuSample::kMemoryClock, "memory_clock_mhz", g.memory_clock_mhz);
  extra(GpuSample::kEnergy, "energy_millijoules", g.energy_millijoules);
  extra(GpuSample::kClocksEventReasons, "clocks_event_reasons", g.clocks_event_reasons);
  extra(GpuSample::kPcieReplay, "pcie_replay_count", g.pcie_replay_count);
  extra(GpuSample::kEccSbeVolatile, "ecc_sbe_volatile", g.ecc_sbe_volatile);
  extra(GpuSample::kEccDbeVolatile, "ecc_dbe_volatile", g.ecc_dbe_volatile);
  extra(GpuSample::kPcieTxBytes, "pcie_tx_bytes_per_second", g.pcie_tx_bytes_per_second);
  extra(GpuSample::kPcieRxBytes, "pcie_rx_bytes_per_second", g.pcie_rx_bytes_per_second);
  auto ratio = [&](GpuSample::Extra e, const char* key, float& field) {
    if (auto v = OptGet<double>(s, key)) {
      if (!(*v >= 0.0 && *v <= 1.0)) throw std::out_of_range(std::string(key) + " outside 0..1");
      field = static_cast<float>(*v);
      g.present |= e;
    }
  };
  ratio(GpuSample::kGrEngineActive, "gr_engine_active", g.gr_engine_active);
  ratio(GpuSample::kSmActive, "sm_active", g.sm_active);
  ratio(GpuSample::kTensorActive, "tensor_active", g.tensor_active);
  ratio(GpuSample::kDramActive, "dram_active", g.dram_active);
  return g;
}

InstanceSample ParseInstanceSample(const json& s) {
  InstanceSample g;
  g.elapsed_ns = JsonGet<std::int64_t>(s.at("elapsed_ns"));
  g.device_index = JsonGet<std::uint32_t>(s.at("device_index"));
  g.gpu_instance_id = JsonGet<std::uint32_t>(s.at("gpu_instance_id"));
  g.memory_used_bytes = OptGet<std::uint64_t>(s, "memory_used_bytes");
  g.memory_total_bytes = OptGet<std::uint64_t>(s, "memory_total_bytes");
  return g;
}

EntityKind ParseKind(const std::string& k) {
  for (EntityKind kind : {EntityKind::kGpu, EntityKind::kGpuInstance, EntityKind::kComputeInstance}) {
    if (EntityKindName(kind) == k) return kind;
  }
  throw std::runtime_error("unknown entity kind \"" + k + "\"");
}

EntityState ParseState(const std::string& k) {
  for (EntityState st : {EntityState::kPresent, EntityState::kLost, EntityState::kSkipped}) {
    if (EntityStateName(st) == k) return st;
  }
  throw std::runtime_error("unknown entity state \"" + k + "\"");
}

// Parent links are not stored: an instance's parent is the nearest entity before it one level up.
std::vector<Entity> ParseEntities(const json& list) {
  std::vector<Entity> out;
  for (const json& j : list) {
    Entity e;
    e.kind = ParseKind(JsonGet<std::string>(j.at("kind")));
    e.vendor = JsonGet<std::string>(j.at("vendor"));
    e.gpu = JsonGet<unsigned>(j.at("gpu"));
    e.gpu_instance_id = OptGet<unsigned>(j, "gpu_instance_id");
    e.compute_instance_id = OptGet<unsigned>(j, "compute_instance_id");
    e.profile = OptGet<std::string>(j, "profile").value_or("");
    e.name = OptGet<std::string>(j, "name").value_or("");
    e.uuid = OptGet<std::string>(j, "uuid").value_or("");
    e.pci_bus_id = OptGet<std::string>(j, "pci_bus_id").value_or("");
    e.state = ParseState(JsonGet<std::string>(j.at("state")));
    e.reason = OptGet<std::string>(j, "reason").value_or("");
    e.lost_unix_ns = OptGet<std::int64_t>(j, "lost_unix_ns");
    EntityKind up = e.kind == EntityKind::kComputeInstance ? EntityKind::kGpuInstance : EntityKind::kGpu;
    for (std::size_t i = out.size(); e.kind != EntityKind::kGpu && i-- > 0;) {
      if (out[i].kind == up && out[i].gpu == e.gpu) {
        e.parent = i;
        break;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<TimelineAbsence> ParseAbsences(const json& timeline) {
  std::vector<TimelineAbsence> out;
  auto it = timeline.find("absent");
  if (it == timeline.end()) return out;
  return ParseAbsenceListJson(*it);
}

}  // namespace

RunInfo ParseRunInfoJson(const json& r) { return ParseRunInfo(r); }
DeviceInfo ParseDeviceJson(const json& d) { return ParseDevice(d); }
std::vector<Entity> ParseEntitiesJson(const json& list) { return ParseEntities(list); }
GpuSample ParseGpuSampleJson(const json& s) { return ParseSample(s); }
InstanceSample ParseInstanceSampleJson(const json& s) { return ParseInstanceSample(s); }
std::vector<TimelineAbsence> ParseAbsenceListJson(const json& list) {
  std::vector<TimelineAbsence> out;
  for (const json& a : list) {
    out.push_back({JsonGet<std::uint32_t>(a.at("device_index")), JsonGet<std::vector<std::string>>(a.at("unsupported")),
                   JsonGet<std::map<std::string, std::uint64_t>>(a.at("failed_samples"))});
  }
  return out;
}
XidEvent ParseXidJson(const json& x) {
  return {JsonGet<std::int64_t>(x.at("elapsed_ns")), JsonGet<std::uint32_t>(x.at("device_index")),
          JsonGet<std::uint64_t>(x.at("xid"))};
}

std::vector<GpuProcess> ParseGpuProcesses(const json& list) {
  std::vector<GpuProcess> out;
  for (const json& p : list) {
    GpuProcess g;
    g.device_index = JsonGet<std::uint32_t>(p.at("device_index"));
    g.pid = JsonGet<std::uint32_t>(p.at("pid"));
    g.name = OptGet<std::string>(p, "name").value_or("");
    g.max_memory_bytes = OptGet<std::uint64_t>(p, "max_memory_bytes");
    g.gpu_instance_id = OptGet<std::uint32_t>(p, "gpu_instance_id");
    g.compute_instance_id = OptGet<std::uint32_t>(p, "compute_instance_id");
    g.sm_utilization_mean_percent = OptGet<double>(p, "sm_utilization_mean_percent");
    g.sm_utilization_samples = OptGet<std::uint64_t>(p, "sm_utilization_samples").value_or(0);
    g.first_seen_ns = OptGet<std::int64_t>(p, "first_seen_ns").value_or(0);
    g.last_seen_ns = OptGet<std::int64_t>(p, "last_seen_ns").value_or(0);
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

ResourceSample ParseResource(const json& s) {
  ResourceSample r;
  r.elapsed_ns = JsonGet<std::int64_t>(s.at("elapsed_ns"));
  r.rss_bytes = JsonGet<std::uint64_t>(s.at("rss_bytes"));
  r.cpu_user_jiffies = JsonGet<std::uint64_t>(s.at("cpu_user_jiffies"));
  r.cpu_system_jiffies = JsonGet<std::uint64_t>(s.at("cpu_system_jiffies"));
  r.thread_count = JsonGet<std::uint32_t>(s.at("thread_count"));
  r.process_count = JsonGet<std::uint32_t>(s.at("process_count"));
  return r;
}

Run ParseRun(const json& j) {
  int version = JsonGet<int>(j.at("schema_version"));
  if (version < 1 || version > kRunSchemaVersion) {
    throw std::runtime_error("unsupported schema_version " + std::to_string(version));
  }
  Run run;
  run.info = ParseRunInfo(j.at("run"));
  for (const json& d : j.at("devices")) run.devices.push_back(ParseDevice(d));
  if (j.contains("entities")) run.entities = ParseEntities(j.at("entities"));
  for (const json& s : j.at("gpu_timeline").at("samples")) run.gpu_samples.push_back(ParseSample(s));
  run.absences = ParseAbsences(j.at("gpu_timeline"));
  if (auto it = j.find("instance_timeline"); it != j.end()) {
    for (const json& s : it->at("samples")) run.instance_samples.push_back(ParseInstanceSample(s));
  }
  for (const json& s : j.at("resource_timeline").at("samples")) {
    run.resource_samples.push_back(ParseResource(s));
  }
  for (const json& x : j.at("xid_events")) run.xid_events.push_back(ParseXidJson(x));
  run.gpu_processes = ParseGpuProcesses(j.at("gpu_processes"));
  run.clock_ticks_per_second = JsonGet<long>(j.at("clock_ticks_per_second"));
  return run;
}

}  // namespace

ResourceSample ParseResourceSampleJson(const json& s) { return ParseResource(s); }

Result<Run> ParseRunJson(std::string_view text, const std::string& origin) {
  if (auto why = CheckJsonShape(text, kRunJsonLimits)) {
    return InvalidArgument(origin + ": not read: " + *why);
  }
  try {
    json j = json::parse(text);
    return ParseRun(j);
  } catch (const std::exception& e) {
    return InvalidArgument(origin + ": not a gpulse run.json: " + e.what());
  }
}

Result<Run> ReadRunJsonFile(const std::string& path) {
  auto text = sys::ReadRegularFile(path, kRunJsonLimits.max_bytes);
  if (!text) return text.error();
  return ParseRunJson(*text, path);
}

}  // namespace gpulse::report
