#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/shell_words.h"
#include "core/xid_catalogue.h"
#include "report/render.h"

namespace gpulse::report {
namespace {

// The most severe action NVIDIA's Xid catalogue gives the run's Xids (docs/faults.md), with the Xid
// and its description; "" without Xids. A recording sees no resets, so nothing is cleared.
std::string RecommendedAction(const std::vector<XidEvent>& xids) {
  const ActionInfo* best = nullptr;
  std::uint64_t by = 0;
  for (const XidEvent& x : xids) {
    const ActionInfo& a = CatalogueAction(x.xid);
    if (best == nullptr || a.rank > best->rank) {
      best = &a;
      by = x.xid;
    }
  }
  if (best == nullptr) return "";
  if (best->rank == 0) return fmt::format("none ({}, Xid {})", best->name, by);
  const XidEntry* e = FindXid(by);
  return fmt::format("{} - {} (Xid {}{}{})", best->name, best->summary, by,
                     e != nullptr && !e->description.empty() ? ": " : "",
                     e != nullptr ? e->description : "");
}

std::string Iso8601(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Watts(std::optional<std::uint32_t> mw) {
  return mw ? fmt::format("{:.1f} W", *mw / 1000.0) : "n/a";
}

template <typename T>
std::string Or(const std::optional<T>& v, const char* suffix) {
  return v ? fmt::format("{}{}", *v, suffix) : "n/a";
}

std::string Bytes(const std::optional<std::uint64_t>& v) { return v ? FormatBytes(*v) : "n/a"; }

std::string Seconds(std::int64_t ns) { return fmt::format("{:.3f} s", ns / 1e9); }

void Header(std::string& o, const RunInfo& r) {
  o += fmt::format("gpulse record: {}\n", ShellJoin(r.command));
  if (!r.complete) {
    o += fmt::format("  INCOMPLETE: {}\n",
                     r.incomplete_reason.value_or("the recording did not finish"));
  }
  std::string status = r.exit_signal ? fmt::format("killed by signal {}", *r.exit_signal)
                       : r.exit_code ? fmt::format("exit code {}", *r.exit_code)
                                     : std::string("did not start");
  std::string pid = r.pid > 0 ? fmt::format("pid {}, ", r.pid) : "";
  o += fmt::format("  {}started {}, duration {}, {}\n", pid, Iso8601(r.start_unix_ns),
                   Seconds(r.duration_ns), r.complete ? status : std::string("end not recorded"));
  o += fmt::format("  sampling every {} ms{}{}\n", r.sample_period_ns / 1'000'000,
                   r.include_descendants ? ", process tree with descendants" : "",
                   r.simulated ? fmt::format("; simulated GPUs (scenario {})", r.scenario) : "");
  if (r.device_selection != "all") o += fmt::format("  GPUs: {}\n", r.device_selection);
  if (r.skipped_ticks > 0) o += fmt::format("  {} late tick(s) skipped\n", r.skipped_ticks);
}

}  // namespace

// The ADR-006 case: the measured PID is a launcher (a shell, `uv run`, a container shim) whose
// children do the work, so its own figures describe nothing.
// "Almost no CPU time" is under 50 ms: starting a process and exec'ing it can be charged a clock
// tick or two on a loaded machine, which must not hide the warning (the e2e test saw 10 ms).
bool LooksLikeWrapper(const RunInfo& info, const ResourceReport& r) {
  constexpr std::uint64_t kTenMiB = 10ull << 20;
  constexpr double kStartupCpuSeconds = 0.05;
  return !info.include_descendants && r.sample_count >= 2 && r.rss_max_bytes &&
         *r.rss_max_bytes < kTenMiB && r.thread_max == 1u && r.cpu_seconds &&
         *r.cpu_seconds < kStartupCpuSeconds;
}

namespace {

void Process(std::string& o, const RunInfo& info, const ResourceReport& r) {
  if (r.sample_count == 0) {
    o += "Process resource usage: no samples";
    o += info.process_sampling_end_reason ? " (" + *info.process_sampling_end_reason + ")\n" : "\n";
    return;
  }
  o += fmt::format("Process resource usage ({} samples)\n", r.sample_count);
  o += fmt::format("  RSS                peak {}  mean {}\n", Bytes(r.rss_max_bytes),
                   Bytes(r.rss_mean_bytes));
  o += fmt::format("                     min  {}  final {}\n", Bytes(r.rss_min_bytes),
                   Bytes(r.rss_final_bytes));
  o += r.cpu_mean_percent ? fmt::format("  CPU utilization    mean {:.0f}%\n", *r.cpu_mean_percent)
                          : std::string("  CPU utilization    (not enough samples)\n");
  o += r.thread_min == r.thread_max
           ? fmt::format("  Threads            {} throughout\n", *r.thread_min)
           : fmt::format("  Threads            {} .. {}\n", *r.thread_min, *r.thread_max);
  if (info.process_sampling_end_reason) {
    o += fmt::format("  (process sampling ended early: {})\n", *info.process_sampling_end_reason);
  }
  if (LooksLikeWrapper(info, r)) {
    o += fmt::format(
        "  Warning: PID {} looks like a wrapper (RSS under 10 MiB, one thread, almost no CPU "
        "time):\n"
        "  the work probably runs in its children; record again with --include-descendants.\n",
        info.pid);
  }
}

// "(120 of 130 samples)" when a reading is missing from some samples, else "".
std::string Partial(std::uint64_t have, std::uint64_t of) {
  return have == of ? "" : fmt::format("  ({} of {} samples)", have, of);
}

void Gpu(std::string& o, const RunInfo& info, const GpuReport& g) {
  const GpuAggregates& a = g.aggregates;
  if (a.sample_count == 0) {
    o += "GPU resource usage: no GPU samples collected";
    o += info.gpu_unavailable_reason ? " (" + *info.gpu_unavailable_reason + ")\n" : "\n";
    return;
  }
  o += fmt::format("GPU resource usage ({} samples{})\n", a.sample_count,
                   g.device_count != 1 ? fmt::format(", {} devices", g.device_count) : "");
  std::uint64_t n = a.sample_count;
  o += fmt::format("  VRAM               peak {}  mean {}{}\n", Bytes(a.memory_used_max_bytes),
                   Bytes(a.memory_used_mean_bytes), Partial(a.memory_sample_count, n));
  o += fmt::format("                     min  {}  total {}\n", Bytes(a.memory_used_min_bytes),
                   Bytes(a.memory_total_bytes));
  o += fmt::format("  SM utilization     peak {}  mean {}  min {}{}\n",
                   Or(a.utilization_max_percent, "%"), Or(a.utilization_mean_percent, "%"),
                   Or(a.utilization_min_percent, "%"), Partial(a.utilization_sample_count, n));
  o += fmt::format("  Temperature        peak {}{}\n", Or(a.temperature_max_celsius, " C"),
                   Partial(a.temperature_sample_count, n));
  o += fmt::format("  Power draw         peak {}  mean {}{}\n", Watts(a.power_max_milliwatts),
                   Watts(a.power_mean_milliwatts), Partial(a.power_sample_count, n));
  if (g.device_count <= 1) return;
  o += "Per-device GPU usage:\n";
  for (const DeviceReport& d : g.per_device) {
    const GpuAggregates& x = d.aggregates;
    o += fmt::format("  GPU {}:  VRAM {} | SM mean {} | power mean {} | temp peak {}\n",
                     d.device_index, Bytes(x.memory_used_max_bytes),
                     Or(x.utilization_mean_percent, "%"), Watts(x.power_mean_milliwatts),
                     Or(x.temperature_max_celsius, " C"));
  }
}

// GPUs that were skipped or lost, with why and when: a device never silently disappears.
void Entities(std::string& o, const Run& run) {
  bool header = false;
  for (const Entity& e : run.entities) {
    if (e.state == EntityState::kPresent || e.kind != EntityKind::kGpu) continue;
    if (!header) o += "GPUs skipped or lost:\n";
    header = true;
    std::string id = e.uuid.empty() ? (e.pci_bus_id.empty() ? "" : " (" + e.pci_bus_id + ")")
                                    : " (" + e.uuid + ")";
    std::string when;
    if (e.lost_unix_ns) {
      when = " at " + Seconds(std::max<std::int64_t>(0, *e.lost_unix_ns - run.info.start_unix_ns));
    } else if (e.state == EntityState::kLost) {
      when = " before start";
    }
    o += fmt::format("  GPU {}{}  {}{}: {}\n", e.gpu, id, EntityStateName(e.state), when, e.reason);
  }
}

void Instances(std::string& o, const GpuReport& g) {
  if (g.per_instance.empty()) return;
  o += "MIG GPU instances (own memory; power, temperature and clocks are the parent GPU's):\n";
  for (const InstanceReport& i : g.per_instance) {
    o += fmt::format("  {:<12} {:<8} VRAM peak {}  mean {}  of {}{}\n",
                     fmt::format("GPU {} GI {}", i.device_index, i.gpu_instance_id),
                     i.profile.empty() ? "-" : i.profile, Bytes(i.memory_used_max_bytes),
                     Bytes(i.memory_used_mean_bytes), Bytes(i.memory_total_bytes),
                     i.sample_count == 0 ? "  (no readings)" : "");
  }
}

std::string Joules(std::optional<double> mj) {
  return mj ? fmt::format("{:.1f} J", *mj / 1000.0) : "n/a";
}
std::string Joules(std::optional<std::uint64_t> mj) {
  return mj ? Joules(std::optional<double>(static_cast<double>(*mj))) : "n/a";
}

// Why a device has no energy figure: a GPU that never gave a power reading (a sensorless board)
// is told apart from a run too short to have two samples (issue 40).
std::string NoEnergyReason(const DeviceReport& d) {
  if (d.aggregates.sample_count < 2) return "fewer than 2 samples";
  if (d.aggregates.power_sample_count == 0)
    return "the GPU gave no power reading and no energy counter";
  return "fewer than 2 samples with power or energy";
}

// "± 12.3 J" after a figure, or "" without a bound (docs/energy.md, "Error bounds").
std::string PlusMinus(std::optional<double> bound_mj) {
  return bound_mj ? fmt::format(" ± {:.1f} J", *bound_mj / 1000.0) : "";
}

void Energy(std::string& o, const GpuReport& g) {
  if (!g.energy_millijoules) return;
  o += fmt::format("Energy (source: {}):\n", EnergySourceName(*g.energy_source));
  o += fmt::format("  Total              {}{}\n", Joules(g.energy_millijoules),
                   PlusMinus(g.energy_bound_millijoules));
  for (const DeviceReport& d : g.per_device) {
    const DeviceEnergy& e = d.energy;
    if (!e.millijoules) {
      o += fmt::format("  GPU {}              n/a ({})\n", d.device_index, NoEnergyReason(d));
      continue;
    }
    std::string cross;
    if (e.counter_millijoules && e.integrated_millijoules && e.relative_difference) {
      cross = fmt::format("; integrated {}, {:+.2f}%", Joules(e.integrated_millijoules),
                          *e.relative_difference * 100);
    }
    o += fmt::format("  GPU {}              {}{} ({}{})\n", d.device_index, Joules(e.millijoules),
                     PlusMinus(e.bound_millijoules), EnergySourceName(*e.source), cross);
    if (e.disagreement) {
      o += fmt::format(
          "  GPU {}              counter and integral differ by more than their bounds (±{} and "
          "±{}): a sensor assumption does not hold on this GPU (docs/energy.md)\n",
          d.device_index, Joules(e.counter_bound_millijoules),
          Joules(e.integrated_bound_millijoules));
    }
  }
}

// Whole-unit readings (percent, MHz) print their mean as its floor, the rule of every integer mean
// in the report, so "SM mean 95%" above and "95/95/97%" here agree.
std::string Mmm(const std::optional<MinMaxMean>& m, const char* unit, const char* f = nullptr) {
  if (!m) return "n/a";
  if (f == nullptr) {
    return fmt::format("{:.0f}/{:.0f}/{:.0f}{}", m->min, std::floor(m->mean), m->max, unit);
  }
  return fmt::format(fmt::runtime(std::string(f) + "/" + f + "/" + f + "{}"), m->min, m->mean,
                     m->max, unit);
}

std::optional<MinMaxMean> Scaled(const std::optional<MinMaxMean>& m, double k) {
  if (!m) return std::nullopt;
  return MinMaxMean{m->min * k, m->max * k, m->mean * k};
}

// dcgmi stats' slowdown rows on one line: "power 0%, thermal 0%, reliability n/a, ...".
std::string Slowdowns(const std::optional<std::map<std::string, std::optional<double>>>& pct) {
  if (!pct) return "n/a";
  std::string out;
  for (const char* cause :
       {"power", "thermal", "reliability", "board_limit", "low_utilization", "sync_boost"}) {
    std::string name = cause;
    std::replace(name.begin(), name.end(), '_', ' ');
    auto it = pct->find(cause);
    const std::string v =
        it != pct->end() && it->second ? fmt::format("{:.0f}%", *it->second) : "n/a";
    out += (out.empty() ? "" : ", ") + name + " " + v;
  }
  return out;
}

void Stats(std::string& o, const GpuReport& g) {
  if (g.per_device.empty()) return;
  o += "Job statistics (min/mean/max):\n";
  for (const DeviceReport& d : g.per_device) {
    const JobStats& s = d.stats;
    o += fmt::format("  GPU {}{}\n", d.device_index, d.uuid.empty() ? "" : " (" + d.uuid + ")");
    o += fmt::format("    Power              {}\n", Mmm(s.power_watts, " W", "{:.1f}"));
    o += fmt::format("    SM utilization     {}\n", Mmm(s.sm_utilization_percent, "%"));
    o += fmt::format("    Memory utilization {}\n", Mmm(s.memory_utilization_percent, "%"));
    o += fmt::format("    SM clock           {}\n", Mmm(s.sm_clock_mhz, " MHz"));
    o += fmt::format("    Memory clock       {}\n", Mmm(s.memory_clock_mhz, " MHz"));
    o += fmt::format("    Max memory used    {}\n", Bytes(s.max_memory_used_bytes));
    o += fmt::format("    PCIe replays       {}\n", Or(s.pcie_replays, ""));
    o += fmt::format("    ECC errors         single-bit {}, double-bit {}\n",
                     Or(s.ecc_sbe_errors, ""), Or(s.ecc_dbe_errors, ""));
    std::string xids;
    for (const XidEvent& x : s.xids)
      xids += fmt::format("{}{} at {}", xids.empty() ? "" : ", ", x.xid, Seconds(x.elapsed_ns));
    o += fmt::format("    XID errors         {}\n", xids.empty() ? "none" : xids);
    if (std::string action = RecommendedAction(s.xids); !action.empty()) {
      o += fmt::format("    Recommended action {}\n", action);
    }
    if (!s.throttle_ns) {
      o += "    Clock events       n/a\n";
    } else {
      std::string t;
      for (const auto& [reason, ns] : *s.throttle_ns)
        t += fmt::format("{}{} {}", t.empty() ? "" : ", ", reason, Seconds(ns));
      o += fmt::format("    Clock events       {}\n", t.empty() ? "none" : t);
    }
    o += fmt::format("    PCIe rx / tx       {} / {}\n",
                     Mmm(Scaled(s.pcie_rx_bytes_per_second, 1e-6), "", "{:.0f}"),
                     Mmm(Scaled(s.pcie_tx_bytes_per_second, 1e-6), " MB/s", "{:.0f}"));
    o += fmt::format("    Slowdowns          {}\n", Slowdowns(s.slowdown_percent));
    std::string incidents;
    for (const std::string& i : s.health_incidents)
      incidents += (incidents.empty() ? "" : "; ") + i;
    o += fmt::format("    Health             {}{}\n", s.overall_health,
                     incidents.empty() ? "" : " (" + incidents + ")");
    if (s.processes.empty())
      o += "    Processes          none of the workload's seen on this GPU\n";
    for (const GpuProcess& p : s.processes) {
      std::string where = p.gpu_instance_id ? fmt::format("  (MIG GI {} CI {})", *p.gpu_instance_id,
                                                          p.compute_instance_id.value_or(0))
                                            : "";
      std::string sm = p.sm_utilization_mean_percent
                           ? fmt::format("{:.0f}%", std::floor(*p.sm_utilization_mean_percent))
                           : "n/a";
      o += fmt::format("    Process {:<8} {:<15} peak memory {}  SM mean {}  seen {} .. {}{}\n",
                       p.pid, p.name.empty() ? "?" : p.name, Bytes(p.max_memory_bytes), sm,
                       Seconds(p.first_seen_ns), Seconds(p.last_seen_ns), where);
    }
  }
}

}  // namespace

std::string FormatBytes(std::uint64_t bytes) {
  constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes >= kGiB) return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / kGiB);
  if (bytes >= kMiB) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} B", bytes);
}

std::string RenderText(const Run& run, const Report& report) {
  // Sections are separated by one blank line, as inferscope lays out its report.
  std::vector<std::string> sections(7);
  Header(sections[0], run.info);
  Process(sections[1], run.info, report.resource);
  Gpu(sections[2], run.info, report.gpu);
  Entities(sections[3], run);
  Instances(sections[4], report.gpu);
  Energy(sections[5], report.gpu);
  Stats(sections[6], report.gpu);
  std::string o;
  for (const std::string& s : sections) {
    if (s.empty()) continue;
    if (!o.empty()) o += "\n";
    o += s;
  }
  return o;
}

}  // namespace gpulse::report
