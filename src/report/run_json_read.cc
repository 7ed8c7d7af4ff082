// Reading run.json back into a Run (see run_json.h). nlohmann throws on type mismatches; those are
// caught here and become an error value naming the file and the JSON path.
#include <map>
#include <nlohmann/json.hpp>

#include "report/run_json.h"
#include "sys/regular_file.h"

namespace gpulse::report {
namespace {

using nlohmann::json;

template <typename T>
std::optional<T> OptGet(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

RunInfo ParseRunInfo(const json& r) {
  RunInfo i;
  i.command = r.at("command").get<std::vector<std::string>>();
  i.start_unix_ns = r.at("start_unix_ns").get<std::int64_t>();
  i.end_unix_ns = r.at("end_unix_ns").get<std::int64_t>();
  i.duration_ns = r.at("duration_ns").get<std::int64_t>();
  i.exit_code = OptGet<int>(r, "exit_code");
  i.exit_signal = OptGet<int>(r, "exit_signal");
  i.gpulse_exit_code = r.at("gpulse_exit_code").get<int>();
  i.sample_period_ns = r.at("sample_period_ns").get<std::int64_t>();
  i.include_descendants = r.at("include_descendants").get<bool>();
  i.simulated = r.at("simulated").get<bool>();
  i.scenario = OptGet<std::string>(r, "scenario").value_or("");
  i.host = r.at("host").get<std::string>();
  i.gpulse_version = r.at("gpulse_version").get<std::string>();
  i.driver_version = OptGet<std::string>(r, "driver_version");
  i.gpu_unavailable_reason = OptGet<std::string>(r, "gpu_unavailable_reason");
  i.cuda_visible_devices = OptGet<std::string>(r, "cuda_visible_devices");
  i.device_selection = r.at("device_selection").get<std::string>();
  i.process_sampling_end_reason = OptGet<std::string>(r, "process_sampling_end_reason");
  i.skipped_ticks = r.at("skipped_ticks").get<std::int64_t>();
  return i;
}

DeviceInfo ParseDevice(const json& d) {
  DeviceInfo i;
  i.index = d.at("index").get<unsigned>();
  i.name = d.at("name").get<std::string>();
  i.uuid = d.at("uuid").get<std::string>();
  i.pci_bus_id = d.at("pci_bus_id").get<std::string>();
  i.memory_total_bytes = OptGet<std::uint64_t>(d, "memory_total_bytes");
  i.power_limit_watts = OptGet<double>(d, "power_limit_watts");
  i.mig_enabled = OptGet<bool>(d, "mig_enabled");
  return i;
}

GpuSample ParseSample(const json& s) {
  GpuSample g;
  g.elapsed_ns = s.at("elapsed_ns").get<std::int64_t>();
  g.device_index = s.at("device_index").get<std::uint32_t>();
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
  return g;
}

InstanceSample ParseInstanceSample(const json& s) {
  InstanceSample g;
  g.elapsed_ns = s.at("elapsed_ns").get<std::int64_t>();
  g.device_index = s.at("device_index").get<std::uint32_t>();
  g.gpu_instance_id = s.at("gpu_instance_id").get<std::uint32_t>();
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
    e.kind = ParseKind(j.at("kind").get<std::string>());
    e.vendor = j.at("vendor").get<std::string>();
    e.gpu = j.at("gpu").get<unsigned>();
    e.gpu_instance_id = OptGet<unsigned>(j, "gpu_instance_id");
    e.compute_instance_id = OptGet<unsigned>(j, "compute_instance_id");
    e.profile = OptGet<std::string>(j, "profile").value_or("");
    e.name = OptGet<std::string>(j, "name").value_or("");
    e.uuid = OptGet<std::string>(j, "uuid").value_or("");
    e.pci_bus_id = OptGet<std::string>(j, "pci_bus_id").value_or("");
    e.state = ParseState(j.at("state").get<std::string>());
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
  for (const json& a : *it) {
    out.push_back({a.at("device_index").get<std::uint32_t>(),
                   a.at("unsupported").get<std::vector<std::string>>(),
                   a.at("failed_samples").get<std::map<std::string, std::uint64_t>>()});
  }
  return out;
}

ResourceSample ParseResource(const json& s) {
  ResourceSample r;
  r.elapsed_ns = s.at("elapsed_ns").get<std::int64_t>();
  r.rss_bytes = s.at("rss_bytes").get<std::uint64_t>();
  r.cpu_user_jiffies = s.at("cpu_user_jiffies").get<std::uint64_t>();
  r.cpu_system_jiffies = s.at("cpu_system_jiffies").get<std::uint64_t>();
  r.thread_count = s.at("thread_count").get<std::uint32_t>();
  r.process_count = s.at("process_count").get<std::uint32_t>();
  return r;
}

Run ParseRun(const json& j) {
  int version = j.at("schema_version").get<int>();
  if (version != kRunSchemaVersion && version != 1) {
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
  for (const json& x : j.at("xid_events")) {
    run.xid_events.push_back({x.at("elapsed_ns").get<std::int64_t>(),
                              x.at("device_index").get<std::uint32_t>(), x.at("xid").get<std::uint64_t>()});
  }
  for (const json& p : j.at("gpu_processes")) {
    run.gpu_processes.push_back({p.at("device_index").get<std::uint32_t>(), p.at("pid").get<std::uint32_t>(),
                                 OptGet<std::uint64_t>(p, "max_memory_bytes"),
                                 OptGet<std::uint32_t>(p, "gpu_instance_id"),
                                 OptGet<std::uint32_t>(p, "compute_instance_id")});
  }
  run.clock_ticks_per_second = j.at("clock_ticks_per_second").get<long>();
  return run;
}

}  // namespace

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
