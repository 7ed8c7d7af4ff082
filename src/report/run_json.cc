#include "report/run_json.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <iterator>
#include <nlohmann/json.hpp>

#include "report/run_json_parts.h"
#include "sys/safe_dir.h"

namespace gpulse::report {
namespace {

using json = nlohmann::ordered_json;

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json RunSection(const RunInfo& r) {
  return {{"command", r.command},
          {"pid", r.pid},
          {"complete", r.complete},
          {"incomplete_reason", Opt(r.incomplete_reason)},
          {"start_unix_ns", r.start_unix_ns},
          {"end_unix_ns", r.end_unix_ns},
          {"duration_ns", r.duration_ns},
          {"exit_code", Opt(r.exit_code)},
          {"exit_signal", Opt(r.exit_signal)},
          {"gpulse_exit_code", r.gpulse_exit_code},
          {"sample_period_ns", r.sample_period_ns},
          {"include_descendants", r.include_descendants},
          {"simulated", r.simulated},
          {"scenario", r.simulated ? json(r.scenario) : json(nullptr)},
          {"host", r.host},
          {"gpulse_version", r.gpulse_version},
          {"driver_version", Opt(r.driver_version)},
          {"gpu_unavailable_reason", Opt(r.gpu_unavailable_reason)},
          {"cuda_visible_devices", Opt(r.cuda_visible_devices)},
          {"device_selection", r.device_selection},
          {"process_sampling_end_reason", Opt(r.process_sampling_end_reason)},
          {"skipped_ticks", r.skipped_ticks}};
}

json DevicesSection(const std::vector<DeviceInfo>& devices) {
  json out = json::array();
  for (const DeviceInfo& d : devices) {
    out.push_back({{"index", d.index},
                   {"name", d.name},
                   {"uuid", d.uuid},
                   {"pci_bus_id", d.pci_bus_id},
                   {"memory_total_bytes", Opt(d.memory_total_bytes)},
                   {"power_limit_watts", Opt(d.power_limit_watts)},
                   {"mig_enabled", Opt(d.mig_enabled)}});
  }
  return out;
}

json EntitiesSection(const std::vector<Entity>& entities, std::int64_t start_unix_ns) {
  json out = json::array();
  for (const Entity& e : entities) {
    json j{{"kind", EntityKindName(e.kind)},
           {"vendor", e.vendor},
           {"gpu", e.gpu},
           {"gpu_instance_id", Opt(e.gpu_instance_id)},
           {"compute_instance_id", Opt(e.compute_instance_id)},
           {"profile", e.profile.empty() ? json(nullptr) : json(e.profile)},
           {"name", e.name.empty() ? json(nullptr) : json(e.name)},
           {"uuid", e.uuid.empty() ? json(nullptr) : json(e.uuid)},
           {"pci_bus_id", e.pci_bus_id.empty() ? json(nullptr) : json(e.pci_bus_id)},
           {"state", EntityStateName(e.state)},
           {"reason", e.reason.empty() ? json(nullptr) : json(e.reason)},
           {"lost_unix_ns", Opt(e.lost_unix_ns)},
           {"lost_elapsed_ns",
            e.lost_unix_ns ? json(std::max<std::int64_t>(0, *e.lost_unix_ns - start_unix_ns))
                           : json(nullptr)}};
    out.push_back(std::move(j));
  }
  return out;
}

json AbsencesJson(const std::vector<TimelineAbsence>& absences) {
  json out = json::array();
  for (const TimelineAbsence& a : absences) {
    if (a.unsupported.empty() && a.failed_samples.empty()) continue;
    out.push_back({{"device_index", a.device_index},
                   {"unsupported", a.unsupported},
                   {"failed_samples", a.failed_samples}});
  }
  return out;
}

json InstancesJson(const std::vector<InstanceReport>& instances) {
  json out = json::array();
  for (const InstanceReport& i : instances) {
    out.push_back({{"device_index", i.device_index},
                   {"gpu_instance_id", i.gpu_instance_id},
                   {"profile", i.profile.empty() ? json(nullptr) : json(i.profile)},
                   {"sample_count", i.sample_count},
                   {"memory_used_min_bytes", Opt(i.memory_used_min_bytes)},
                   {"memory_used_max_bytes", Opt(i.memory_used_max_bytes)},
                   {"memory_used_mean_bytes", Opt(i.memory_used_mean_bytes)},
                   {"memory_total_bytes", Opt(i.memory_total_bytes)}});
  }
  return out;
}

json AggregatesJson(const GpuAggregates& a) {
  return {{"sample_count", a.sample_count},
          {"memory_sample_count", a.memory_sample_count},
          {"utilization_sample_count", a.utilization_sample_count},
          {"power_sample_count", a.power_sample_count},
          {"temperature_sample_count", a.temperature_sample_count},
          {"memory_used_min_bytes", Opt(a.memory_used_min_bytes)},
          {"memory_used_max_bytes", Opt(a.memory_used_max_bytes)},
          {"memory_used_mean_bytes", Opt(a.memory_used_mean_bytes)},
          {"memory_total_bytes", Opt(a.memory_total_bytes)},
          {"utilization_min_percent", Opt(a.utilization_min_percent)},
          {"utilization_max_percent", Opt(a.utilization_max_percent)},
          {"utilization_mean_percent", Opt(a.utilization_mean_percent)},
          {"power_max_milliwatts", Opt(a.power_max_milliwatts)},
          {"power_mean_milliwatts", Opt(a.power_mean_milliwatts)},
          {"temperature_max_celsius", Opt(a.temperature_max_celsius)}};
}

json SourceJson(const std::optional<EnergySource>& s) {
  return s ? json(EnergySourceName(*s)) : json(nullptr);
}

json EnergyJson(const DeviceEnergy& e, json& into) {
  into["energy_millijoules"] = Opt(e.millijoules);
  into["energy_source"] = SourceJson(e.source);
  into["energy_counter_millijoules"] = Opt(e.counter_millijoules);
  into["energy_integrated_millijoules"] = Opt(e.integrated_millijoules);
  into["energy_relative_difference"] = Opt(e.relative_difference);
  into["energy_bound_millijoules"] = Opt(e.bound_millijoules);
  into["energy_counter_bound_millijoules"] = Opt(e.counter_bound_millijoules);
  into["energy_integrated_bound_millijoules"] = Opt(e.integrated_bound_millijoules);
  into["energy_disagreement"] = e.disagreement;
  return into;
}

json MmmJson(const std::optional<MinMaxMean>& m) {
  if (!m) return nullptr;
  return {{"min", m->min}, {"max", m->max}, {"mean", m->mean}};
}

json XidsJson(const std::vector<XidEvent>& xids) {
  json out = json::array();
  for (const XidEvent& x : xids) {
    out.push_back({{"elapsed_ns", x.elapsed_ns}, {"device_index", x.device_index}, {"xid", x.xid}});
  }
  return out;
}

json ProcessesJson(const std::vector<GpuProcess>& ps) {
  json out = json::array();
  for (const GpuProcess& p : ps) {
    out.push_back({{"device_index", p.device_index},
                   {"pid", p.pid},
                   {"name", p.name.empty() ? json(nullptr) : json(p.name)},
                   {"max_memory_bytes", Opt(p.max_memory_bytes)},
                   {"gpu_instance_id", Opt(p.gpu_instance_id)},
                   {"compute_instance_id", Opt(p.compute_instance_id)},
                   {"sm_utilization_mean_percent", Opt(p.sm_utilization_mean_percent)},
                   {"sm_utilization_samples", p.sm_utilization_samples},
                   {"first_seen_ns", p.first_seen_ns},
                   {"last_seen_ns", p.last_seen_ns}});
  }
  return out;
}

json SlowdownJson(const std::optional<std::map<std::string, std::optional<double>>>& pct) {
  if (!pct) return nullptr;
  json out = json::object();
  for (const auto& [cause, v] : *pct) out[cause] = v ? json(*v) : json(nullptr);
  return out;
}

}  // namespace

json JobStatsJson(const DeviceReport& d) {
  const JobStats& s = d.stats;
  json j{{"device_index", d.device_index},
         {"uuid", d.uuid},
         {"power_watts", MmmJson(s.power_watts)},
         {"sm_utilization_percent", MmmJson(s.sm_utilization_percent)},
         {"memory_utilization_percent", MmmJson(s.memory_utilization_percent)},
         {"sm_clock_mhz", MmmJson(s.sm_clock_mhz)},
         {"memory_clock_mhz", MmmJson(s.memory_clock_mhz)},
         {"pcie_tx_bytes_per_second", MmmJson(s.pcie_tx_bytes_per_second)},
         {"pcie_rx_bytes_per_second", MmmJson(s.pcie_rx_bytes_per_second)},
         {"max_memory_used_bytes", Opt(s.max_memory_used_bytes)},
         {"pcie_replays", Opt(s.pcie_replays)},
         {"ecc_sbe_errors", Opt(s.ecc_sbe_errors)},
         {"ecc_dbe_errors", Opt(s.ecc_dbe_errors)},
         {"xid_errors", XidsJson(s.xids)},
         {"throttle_ns", s.throttle_ns ? json(*s.throttle_ns) : json(nullptr)},
         {"slowdown_percent", SlowdownJson(s.slowdown_percent)},
         {"overall_health", s.overall_health},
         {"health_incidents", s.health_incidents},
         {"processes", ProcessesJson(s.processes)}};
  EnergyJson(d.energy, j);
  return j;
}

std::string JobStatisticsJson(const DeviceReport& d) { return JobStatsJson(d).dump(); }

namespace {

// inferscope's `gpu`: null when no GPU sample was taken (its GpuMetrics has no empty form).
json GpuSection(const GpuReport& g) {
  if (g.aggregates.sample_count == 0) return nullptr;
  json j = AggregatesJson(g.aggregates);
  j["device_count"] = g.device_count;
  j["energy_millijoules"] = Opt(g.energy_millijoules);
  j["energy_source"] = SourceJson(g.energy_source);
  j["energy_bound_millijoules"] = Opt(g.energy_bound_millijoules);
  json per = json::array();
  for (const DeviceReport& d : g.per_device) {
    json e = AggregatesJson(d.aggregates);
    e["device_index"] = d.device_index;
    e["uuid"] = d.uuid;
    EnergyJson(d.energy, e);
    per.push_back(std::move(e));
  }
  j["per_device"] = std::move(per);
  j["per_instance"] = InstancesJson(g.per_instance);
  return j;
}

// inferscope's `resource`: null when no process sample was taken.
json ResourceSection(const ResourceReport& r) {
  if (r.sample_count == 0) return nullptr;
  return {{"sample_count", r.sample_count},
          {"rss_min_bytes", Opt(r.rss_min_bytes)},
          {"rss_max_bytes", Opt(r.rss_max_bytes)},
          {"rss_mean_bytes", Opt(r.rss_mean_bytes)},
          {"rss_final_bytes", Opt(r.rss_final_bytes)},
          {"thread_min", Opt(r.thread_min)},
          {"thread_max", Opt(r.thread_max)},
          {"cpu_mean_percent", Opt(r.cpu_mean_percent)},
          {"cpu_seconds", Opt(r.cpu_seconds)}};
}

// inferscope's GpuTimeline.energy: one entry per device with an energy figure; absent (the key
// left out, as inferscope does) when none has one.
json TimelineEnergy(const GpuReport& g) {
  json out = json::array();
  for (const DeviceReport& d : g.per_device) {
    if (!d.energy.millijoules) continue;
    out.push_back({{"device_index", d.device_index},
                   {"energy_millijoules", *d.energy.millijoules},
                   {"source", EnergySourceName(*d.energy.source)}});
  }
  return out;
}

// Streams one object per sample into a growing buffer flushed in large writes.
class Sink {
 public:
  explicit Sink(std::FILE* f) : f_(f) {}
  fmt::memory_buffer& buf() { return buf_; }
  bool MaybeFlush() { return buf_.size() < (1u << 20) || Flush(); }
  bool Flush() {
    bool ok = Write(buf_);
    buf_.clear();
    return ok;
  }
  bool Write(const fmt::memory_buffer& b) {
    return std::fwrite(b.data(), 1, b.size(), f_) == b.size();
  }

 private:
  std::FILE* f_;
  fmt::memory_buffer buf_;
};

// The timeline is the bulk of run.json (millions of objects): keys are appended as literals and
// numbers with fmt::format_int, with no format-string parsing per sample.
template <std::size_t N>
void Lit(fmt::memory_buffer& b, const char (&text)[N]) {
  b.append(text, text + N - 1);
}

void Num(fmt::memory_buffer& b, std::uint64_t v) {
  fmt::format_int f(v);
  b.append(f.data(), f.data() + f.size());
}

void Num(fmt::memory_buffer& b, std::int64_t v) {
  fmt::format_int f(v);
  b.append(f.data(), f.data() + f.size());
}

// An ADR-007 reading: its number, or null when absent.
template <std::size_t N>
void Core(fmt::memory_buffer& b, const GpuSample& s, GpuSample::Extra e, const char (&key)[N],
          std::uint64_t v) {
  Lit(b, key);
  if (s.has(e)) {
    Num(b, v);
  } else {
    Lit(b, "null");
  }
}

void AppendSample(fmt::memory_buffer& b, const GpuSample& s) {
  Lit(b, "{\"elapsed_ns\":");
  Num(b, s.elapsed_ns);
  Lit(b, ",\"device_index\":");
  Num(b, std::uint64_t{s.device_index});
  Core(b, s, GpuSample::kMemoryUsed, ",\"memory_used_bytes\":", s.memory_used_bytes);
  Core(b, s, GpuSample::kMemoryTotal, ",\"memory_total_bytes\":", s.memory_total_bytes);
  Core(b, s, GpuSample::kUtilization, ",\"utilization_percent\":", s.utilization_percent);
  Core(b, s, GpuSample::kTemperature, ",\"temperature_celsius\":", s.temperature_celsius);
  Core(b, s, GpuSample::kPower, ",\"power_draw_milliwatts\":", s.power_draw_milliwatts);
  auto extra = [&](GpuSample::Extra e, const auto& key, std::uint64_t v) {
    if (!s.has(e)) return;
    Lit(b, key);
    Num(b, v);
  };
  extra(GpuSample::kMemoryUtilization,
        ",\"memory_utilization_percent\":", s.memory_utilization_percent);
  extra(GpuSample::kSmClock, ",\"sm_clock_mhz\":", s.sm_clock_mhz);
  extra(GpuSample::kMemoryClock, ",\"memory_clock_mhz\":", s.memory_clock_mhz);
  extra(GpuSample::kEnergy, ",\"energy_millijoules\":", s.energy_millijoules);
  extra(GpuSample::kClocksEventReasons, ",\"clocks_event_reasons\":", s.clocks_event_reasons);
  extra(GpuSample::kPcieReplay, ",\"pcie_replay_count\":", s.pcie_replay_count);
  extra(GpuSample::kEccSbeVolatile, ",\"ecc_sbe_volatile\":", s.ecc_sbe_volatile);
  extra(GpuSample::kEccDbeVolatile, ",\"ecc_dbe_volatile\":", s.ecc_dbe_volatile);
  auto ratio = [&](GpuSample::Extra e, const auto& key, float v) {
    if (!s.has(e)) return;
    Lit(b, key);
    fmt::format_to(std::back_inserter(b), "{:.4f}", v);
  };
  ratio(GpuSample::kGrEngineActive, ",\"gr_engine_active\":", s.gr_engine_active);
  ratio(GpuSample::kSmActive, ",\"sm_active\":", s.sm_active);
  ratio(GpuSample::kTensorActive, ",\"tensor_active\":", s.tensor_active);
  ratio(GpuSample::kDramActive, ",\"dram_active\":", s.dram_active);
  extra(GpuSample::kPcieTxBytes, ",\"pcie_tx_bytes_per_second\":", s.pcie_tx_bytes_per_second);
  extra(GpuSample::kPcieRxBytes, ",\"pcie_rx_bytes_per_second\":", s.pcie_rx_bytes_per_second);
  b.push_back('}');
}

void AppendInstanceSample(fmt::memory_buffer& b, const InstanceSample& s) {
  Lit(b, "{\"elapsed_ns\":");
  Num(b, s.elapsed_ns);
  Lit(b, ",\"device_index\":");
  Num(b, std::uint64_t{s.device_index});
  Lit(b, ",\"gpu_instance_id\":");
  Num(b, std::uint64_t{s.gpu_instance_id});
  for (auto [key, v] :
       {std::pair{std::string_view(",\"memory_used_bytes\":"), s.memory_used_bytes},
        std::pair{std::string_view(",\"memory_total_bytes\":"), s.memory_total_bytes}}) {
    b.append(key);
    if (v) {
      Num(b, *v);
    } else {
      Lit(b, "null");
    }
  }
  b.push_back('}');
}

void AppendResource(fmt::memory_buffer& b, const ResourceSample& s) {
  Lit(b, "{\"elapsed_ns\":");
  Num(b, s.elapsed_ns);
  Lit(b, ",\"rss_bytes\":");
  Num(b, s.rss_bytes);
  Lit(b, ",\"cpu_user_jiffies\":");
  Num(b, s.cpu_user_jiffies);
  Lit(b, ",\"cpu_system_jiffies\":");
  Num(b, s.cpu_system_jiffies);
  Lit(b, ",\"thread_count\":");
  Num(b, std::uint64_t{s.thread_count});
  Lit(b, ",\"process_count\":");
  Num(b, std::uint64_t{s.process_count});
  b.push_back('}');
}

// Writes a JSON array of `items`, formatting chunks of it on worker threads while the caller's
// thread writes finished chunks in order. At most kInFlight chunks exist at once, so the memory
// this adds is bounded (a few MB) whatever the timeline's length.
template <typename Container, typename AppendFn>
bool WriteArray(Sink& sink, const Container& items, AppendFn append) {
  constexpr std::size_t kChunk = 8192, kInFlight = 4;
  auto format_chunk = [&items, append](std::size_t begin, std::size_t end) {
    fmt::memory_buffer b;
    b.reserve((end - begin) * 512);
    for (auto it = std::next(items.begin(), static_cast<std::ptrdiff_t>(begin)); begin < end;
         ++begin, ++it) {
      b.append(std::string_view(begin == 0 ? "\n    " : ",\n    "));
      append(b, *it);
    }
    return b;
  };
  sink.buf().push_back('[');
  std::deque<std::future<fmt::memory_buffer>> pending;
  bool ok = true;
  auto write_front = [&] {
    fmt::memory_buffer chunk = pending.front().get();
    pending.pop_front();
    if (!sink.Flush() || !sink.Write(chunk)) ok = false;
  };
  for (std::size_t begin = 0; begin < items.size(); begin += kChunk) {
    std::size_t end = std::min(items.size(), begin + kChunk);
    pending.push_back(std::async(std::launch::async, format_chunk, begin, end));
    if (pending.size() >= kInFlight) write_front();
  }
  while (!pending.empty()) write_front();
  sink.buf().append(std::string_view(items.empty() ? "]" : "\n  ]"));
  return ok && sink.MaybeFlush();
}

// The same array from already-formatted sample objects: copied with the separators WriteArray
// puts between them, so the bytes are identical.
bool WriteViews(Sink& sink, const std::vector<std::string_view>& items) {
  auto& b = sink.buf();
  b.push_back('[');
  for (std::size_t i = 0; i < items.size(); ++i) {
    b.append(std::string_view(i == 0 ? "\n    " : ",\n    "));
    b.append(items[i]);
    if (!sink.MaybeFlush()) return false;
  }
  b.append(std::string_view(items.empty() ? "]" : "\n  ]"));
  return sink.MaybeFlush();
}

// The formatted copy when it covers the timeline exactly, else the formatter.
template <typename Container, typename AppendFn>
bool WriteTimeline(Sink& sink, const Container& items, const std::vector<std::string_view>* views,
                   AppendFn append) {
  if (views != nullptr && views->size() == items.size()) return WriteViews(sink, *views);
  return WriteArray(sink, items, append);
}

void AppendJson(fmt::memory_buffer& b, std::string_view key, const json& value, bool last = false) {
  fmt::format_to(std::back_inserter(b), "  \"{}\": {}{}\n", key, value.dump(), last ? "" : ",");
}

}  // namespace

json RunInfoJson(const RunInfo& r) { return RunSection(r); }
json DevicesJson(const std::vector<DeviceInfo>& devices) { return DevicesSection(devices); }
json EntitiesJson(const std::vector<Entity>& entities, std::int64_t start_unix_ns) {
  return EntitiesSection(entities, start_unix_ns);
}
json AbsenceListJson(const std::vector<TimelineAbsence>& absences) {
  return AbsencesJson(absences);
}
json XidJson(const XidEvent& x) {
  return {{"elapsed_ns", x.elapsed_ns}, {"device_index", x.device_index}, {"xid", x.xid}};
}
json GpuProcessesJson(const std::vector<GpuProcess>& processes) { return ProcessesJson(processes); }
void AppendGpuSampleJson(fmt::memory_buffer& b, const GpuSample& s) { AppendSample(b, s); }
void AppendInstanceSampleJson(fmt::memory_buffer& b, const InstanceSample& s) {
  AppendInstanceSample(b, s);
}
void AppendResourceSampleJson(fmt::memory_buffer& b, const ResourceSample& s) {
  AppendResource(b, s);
}

Status WriteRunJson(const Run& run, const Report& report, std::FILE* out,
                    const FormattedTimelines* formatted) {
  auto views = [&](const std::vector<std::string_view> FormattedTimelines::*member) {
    return formatted != nullptr ? &(formatted->*member) : nullptr;
  };
  Sink sink(out);
  auto& b = sink.buf();
  b.append(std::string_view("{\n"));
  AppendJson(b, "schema_version", kRunSchemaVersion);
  // inferscope's sample-only report (ResourceReport) at the top level: docs/record.md.
  AppendJson(b, "reference_instant_unix_ns", run.info.start_unix_ns);
  AppendJson(b, "pid", run.info.pid);
  AppendJson(b, "include_descendants", run.info.include_descendants);
  AppendJson(b, "sample_period_ms", run.info.sample_period_ns / 1'000'000);
  AppendJson(b, "duration_secs", (run.info.duration_ns + 999'999'999) / 1'000'000'000);
  AppendJson(b, "run", RunSection(run.info));
  AppendJson(b, "devices", DevicesSection(run.devices));
  AppendJson(b, "entities", EntitiesSection(run.entities, run.info.start_unix_ns));
  json job = json::array();
  for (const DeviceReport& d : report.gpu.per_device) job.push_back(JobStatsJson(d));
  AppendJson(b, "gpu", GpuSection(report.gpu));
  AppendJson(b, "job_statistics", job);
  AppendJson(b, "resource", ResourceSection(report.resource));
  AppendJson(b, "xid_events", XidsJson(run.xid_events));
  AppendJson(b, "gpu_processes", ProcessesJson(run.gpu_processes));
  AppendJson(b, "clock_ticks_per_second", run.clock_ticks_per_second);
  fmt::format_to(std::back_inserter(b),
                 "  \"resource_timeline\": {{\"sample_period_ns\": {}, \"samples\": ",
                 run.info.sample_period_ns);
  if (!WriteTimeline(sink, run.resource_samples, views(&FormattedTimelines::resource),
                     AppendResource)) {
    return Error{ErrorCode::kIo, "write failed"};
  }
  fmt::format_to(std::back_inserter(b),
                 "}},\n  \"instance_timeline\": {{\"sample_period_ns\": {}, \"samples\": ",
                 run.info.sample_period_ns);
  if (!WriteTimeline(sink, run.instance_samples, views(&FormattedTimelines::instance),
                     AppendInstanceSample)) {
    return Error{ErrorCode::kIo, "write failed"};
  }
  json energy = TimelineEnergy(report.gpu);
  fmt::format_to(
      std::back_inserter(b),
      "}},\n  \"gpu_timeline\": {{\"sample_period_ns\": {}, \"absent\": {}, {}\"samples\": ",
      run.info.sample_period_ns, AbsencesJson(run.absences).dump(),
      energy.empty() ? std::string() : "\"energy\": " + energy.dump() + ", ");
  if (!WriteTimeline(sink, run.gpu_samples, views(&FormattedTimelines::gpu), AppendSample)) {
    return Error{ErrorCode::kIo, "write failed"};
  }
  b.append(std::string_view("}\n}\n"));
  if (!sink.Flush() || std::fflush(out) != 0) {
    return Error{ErrorCode::kIo, std::string("write failed: ") + std::strerror(errno)};
  }
  return Status::Ok();
}

Status WriteRunJsonFile(const Run& run, const Report& report, const std::string& path,
                        const FormattedTimelines* formatted) {
  // Through the run directory's descriptor: a temp file created O_EXCL, 0644, renamed over the
  // name; a symbolic link at `path` is refused, never followed (sys/safe_dir.h).
  auto at = sys::Dir::OpenParent(path);
  if (!at.ok()) return at.error();
  const auto& [dir, name] = *at;
  return dir.WriteAtomic(name, [&](int fd) -> Status {
    int own = ::dup(fd);  // fclose closes the stream's descriptor; the Dir closes its own
    std::FILE* f = own < 0 ? nullptr : ::fdopen(own, "w");
    if (f == nullptr) {
      if (own >= 0) ::close(own);
      return Error{ErrorCode::kIo, "cannot write " + path + ": " + std::strerror(errno)};
    }
    Status st = WriteRunJson(run, report, f, formatted);
    if (std::fclose(f) != 0 && st.ok()) st = Error{ErrorCode::kIo, "cannot close " + path};
    if (!st.ok()) return Error{ErrorCode::kIo, path + ": " + st.error().message};
    return Status::Ok();
  });
}

}  // namespace gpulse::report
