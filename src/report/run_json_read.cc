// Reading run.json back into a Run (see run_json.h). nlohmann throws on type mismatches; those are
// caught here and become an error value naming the file and the JSON path.
#include <fstream>
#include <nlohmann/json.hpp>

#include "report/run_json.h"

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
  g.memory_used_bytes = s.at("memory_used_bytes").get<std::uint64_t>();
  g.memory_total_bytes = s.at("memory_total_bytes").get<std::uint64_t>();
  g.utilization_percent = s.at("utilization_percent").get<std::uint32_t>();
  g.temperature_celsius = s.at("temperature_celsius").get<std::uint32_t>();
  g.power_draw_milliwatts = s.at("power_draw_milliwatts").get<std::uint32_t>();
  auto extra = [&](GpuSample::Extra e, const char* key, auto& field) {
    if (auto v = OptGet<std::remove_reference_t<decltype(field)>>(s, key)) {
      field = *v;
      g.present |= e;
    }
  };
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
  if (version != kRunSchemaVersion) {
    throw std::runtime_error("unsupported schema_version " + std::to_string(version));
  }
  Run run;
  run.info = ParseRunInfo(j.at("run"));
  for (const json& d : j.at("devices")) run.devices.push_back(ParseDevice(d));
  for (const json& s : j.at("gpu_timeline").at("samples")) run.gpu_samples.push_back(ParseSample(s));
  for (const json& s : j.at("resource_timeline").at("samples")) {
    run.resource_samples.push_back(ParseResource(s));
  }
  for (const json& x : j.at("xid_events")) {
    run.xid_events.push_back({x.at("elapsed_ns").get<std::int64_t>(),
                              x.at("device_index").get<std::uint32_t>(), x.at("xid").get<std::uint64_t>()});
  }
  for (const json& p : j.at("gpu_processes")) {
    run.gpu_processes.push_back({p.at("device_index").get<std::uint32_t>(), p.at("pid").get<std::uint32_t>(),
                                 OptGet<std::uint64_t>(p, "max_memory_bytes")});
  }
  run.clock_ticks_per_second = j.at("clock_ticks_per_second").get<long>();
  return run;
}

}  // namespace

Result<Run> ReadRunJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open " + path);
  try {
    json j = json::parse(in);
    return ParseRun(j);
  } catch (const std::exception& e) {
    return InvalidArgument(path + ": not a gpulse run.json: " + e.what());
  }
}

}  // namespace gpulse::report
