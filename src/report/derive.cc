#include "report/derive.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/energy_bound.h"

namespace gpulse::report {
namespace {

using u128 = unsigned __int128;

// Min, max and sum of one integer reading over the samples that have it.
template <typename T>
class Range {
 public:
  void Add(T v) {
    min_ = n_ == 0 ? v : std::min(min_, v);
    max_ = n_ == 0 ? v : std::max(max_, v);
    sum_ += v;
    ++n_;
  }
  std::uint64_t count() const { return n_; }
  std::optional<T> min() const { return n_ ? std::optional<T>(min_) : std::nullopt; }
  std::optional<T> max() const { return n_ ? std::optional<T>(max_) : std::nullopt; }
  std::optional<T> mean() const {
    return n_ ? std::optional<T>(static_cast<T>(sum_ / n_)) : std::nullopt;
  }

 private:
  std::uint64_t n_ = 0;
  T min_{}, max_{};
  u128 sum_ = 0;
};

// Accumulates the ADR-007 set over a stream of samples, each reading over the samples with it.
class AggregateBuilder {
 public:
  void Add(const GpuSample& s) {
    ++n_;
    if (s.has(GpuSample::kMemoryUsed)) mem_.Add(s.memory_used_bytes);
    // The largest device's total (inferscope: the first sample's, the same on a homogeneous node;
    // on a mixed host the first device's total under another device's peak read wrong).
    if (s.has(GpuSample::kMemoryTotal)) total_ = std::max(total_.value_or(0), s.memory_total_bytes);
    if (s.has(GpuSample::kUtilization)) util_.Add(s.utilization_percent);
    if (s.has(GpuSample::kPower)) power_.Add(s.power_draw_milliwatts);
    if (s.has(GpuSample::kTemperature)) temp_.Add(s.temperature_celsius);
  }

  GpuAggregates Build() const {
    GpuAggregates a;
    a.sample_count = n_;
    a.memory_sample_count = mem_.count();
    a.utilization_sample_count = util_.count();
    a.power_sample_count = power_.count();
    a.temperature_sample_count = temp_.count();
    a.memory_used_min_bytes = mem_.min();
    a.memory_used_max_bytes = mem_.max();
    a.memory_used_mean_bytes = mem_.mean();
    a.memory_total_bytes = total_;
    a.utilization_min_percent = util_.min();
    a.utilization_max_percent = util_.max();
    a.utilization_mean_percent = util_.mean();
    a.power_max_milliwatts = power_.max();
    a.power_mean_milliwatts = power_.mean();
    a.temperature_max_celsius = temp_.max();
    return a;
  }

 private:
  std::uint64_t n_ = 0;
  Range<std::uint64_t> mem_;
  std::optional<std::uint64_t> total_;
  Range<std::uint32_t> util_, power_, temp_;
};

class StatBuilder {
 public:
  void Add(double v) {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
    sum_ += v;
    ++n_;
  }
  std::optional<MinMaxMean> Build() const {
    if (n_ == 0) return std::nullopt;
    return MinMaxMean{min_, max_, sum_ / static_cast<double>(n_)};
  }

 private:
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  double sum_ = 0;
  std::uint64_t n_ = 0;
};

// dcgmi stats' slowdown causes from NVML's clock-event reason bits (nvmlClocksEventReason*):
// power = SW power cap or HW power brake, thermal = SW or HW thermal slowdown, board limit = HW
// slowdown not explained by HW thermal or HW power brake (NVML raises HW slowdown with either of
// those, which are counted under their own cause), low utilization = GPU idle, sync boost.
// Reliability has no reason bit. (ClockReasonName's order: gpu_idle 0, applications_clocks_setting
// 1, sw_power_cap 2, hw_slowdown 3, sync_boost 4, sw_thermal_slowdown 5, hw_thermal_slowdown 6,
// hw_power_brake_slowdown 7.)
struct SlowdownCause {
  const char* name;
  std::uint64_t reasons;  // any of these active: the cause
  std::uint64_t unless;   // ... unless one of these is, which another cause counts
};
constexpr SlowdownCause kSlowdownCauses[] = {
    {"power", (1U << 2) | (1U << 7), 0},
    {"thermal", (1U << 5) | (1U << 6), 0},
    {"board_limit", 1U << 3, (1U << 6) | (1U << 7)},
    {"low_utilization", 1U << 0, 0},
    {"sync_boost", 1U << 4, 0},
};

// Everything per device, built in one pass over that device's samples in time order.
class DeviceBuilder {
 public:
  // `limit_w`: the enforced power limit at open, the base of the power ceiling of the bounds.
  void SetLimit(std::optional<double> limit_w) {
    limit_w_ = limit_w;
    if (auto c = CeilingW(limit_w, std::nullopt)) integral_bound_.emplace(*c);
  }

  void Add(const GpuSample& s) {
    agg_.Add(s);
    if (s.has(GpuSample::kPower)) power_.Add(s.power_draw_milliwatts / 1000.0);
    if (s.has(GpuSample::kUtilization)) sm_util_.Add(s.utilization_percent);
    if (s.has(GpuSample::kMemoryUtilization)) mem_util_.Add(s.memory_utilization_percent);
    if (s.has(GpuSample::kSmClock)) sm_clock_.Add(s.sm_clock_mhz);
    if (s.has(GpuSample::kMemoryClock)) mem_clock_.Add(s.memory_clock_mhz);
    if (s.has(GpuSample::kPcieTxBytes))
      pcie_tx_.Add(static_cast<double>(s.pcie_tx_bytes_per_second));
    if (s.has(GpuSample::kPcieRxBytes))
      pcie_rx_.Add(static_cast<double>(s.pcie_rx_bytes_per_second));
    if (s.has(GpuSample::kMemoryUsed))
      max_mem_ = std::max(max_mem_.value_or(0), s.memory_used_bytes);
    if (s.has(GpuSample::kEnergy)) {
      if (!first_energy_) first_energy_ = {s.elapsed_ns, s.energy_millijoules};
      NoteCounterStill(s);
      last_energy_ = {s.elapsed_ns, s.energy_millijoules};
    }
    if (s.has(GpuSample::kPower)) {
      max_power_w_ = std::max(max_power_w_.value_or(0), s.power_draw_milliwatts / 1000.0);
      if (prev_power_) {
        double dt_s = static_cast<double>(s.elapsed_ns - prev_power_->elapsed_ns) * 1e-9;
        // mW * s = mJ, over consecutive samples that both have power: a sample without power is a
        // gap in the integral, never bridged by interpolation.
        integral_mj_ += 0.5 * (prev_power_->power_draw_milliwatts + s.power_draw_milliwatts) * dt_s;
        if (integral_bound_) {
          integral_bound_->Add(dt_s, prev_power_->power_draw_milliwatts / 1000.0,
                               s.power_draw_milliwatts / 1000.0);
        }
        integrated_ = true;
      }
      if (!first_power_ns_) first_power_ns_ = s.elapsed_ns;
      last_power_ns_ = s.elapsed_ns;
      prev_power_ = s;
    } else if (prev_power_) {
      prev_power_.reset();
      power_gap_ = true;
    }
    if (prev_) {
      if (prev_->has(GpuSample::kClocksEventReasons)) {
        for (int bit = 0; bit < 64; ++bit) {
          if ((prev_->clocks_event_reasons >> bit) & 1U) {
            (*throttle_)[ClockReasonName(bit)] += s.elapsed_ns - prev_->elapsed_ns;
          }
        }
        // A cause's interval counts once however many of its reasons were active.
        for (const SlowdownCause& c : kSlowdownCauses) {
          const std::uint64_t bits = prev_->clocks_event_reasons;
          if ((bits & c.reasons) != 0 && (bits & c.unless) == 0)
            slowdown_ns_[c.name] += s.elapsed_ns - prev_->elapsed_ns;
        }
        reasons_span_ns_ += s.elapsed_ns - prev_->elapsed_ns;
      }
    } else {
      first_ = s;
    }
    if (s.has(GpuSample::kClocksEventReasons) && !throttle_) throttle_.emplace();
    prev_ = s;
  }

  DeviceReport Build(std::uint32_t index) const {
    DeviceReport d;
    d.device_index = index;
    d.aggregates = agg_.Build();
    d.energy = Energy();
    d.stats.power_watts = power_.Build();
    d.stats.sm_utilization_percent = sm_util_.Build();
    d.stats.memory_utilization_percent = mem_util_.Build();
    d.stats.sm_clock_mhz = sm_clock_.Build();
    d.stats.memory_clock_mhz = mem_clock_.Build();
    d.stats.pcie_tx_bytes_per_second = pcie_tx_.Build();
    d.stats.pcie_rx_bytes_per_second = pcie_rx_.Build();
    d.stats.max_memory_used_bytes = max_mem_;
    if (first_ && prev_) {
      d.stats.pcie_replays =
          Delta(GpuSample::kPcieReplay, first_->pcie_replay_count, prev_->pcie_replay_count);
      d.stats.ecc_sbe_errors =
          Delta(GpuSample::kEccSbeVolatile, first_->ecc_sbe_volatile, prev_->ecc_sbe_volatile);
      d.stats.ecc_dbe_errors =
          Delta(GpuSample::kEccDbeVolatile, first_->ecc_dbe_volatile, prev_->ecc_dbe_volatile);
    }
    d.stats.throttle_ns = throttle_;
    if (throttle_ && reasons_span_ns_ > 0) {
      std::map<std::string, std::optional<double>> pct;
      for (const SlowdownCause& c : kSlowdownCauses) {
        auto it = slowdown_ns_.find(c.name);
        pct[c.name] = it == slowdown_ns_.end() ? 0.0
                                               : 100.0 * static_cast<double>(it->second) /
                                                     static_cast<double>(reasons_span_ns_);
      }
      pct["reliability"] = std::nullopt;  // no clock-event reason says it
      d.stats.slowdown_percent = std::move(pct);
    }
    d.stats.sample_count = d.aggregates.sample_count;
    return d;
  }

 private:
  std::optional<std::uint64_t> Delta(GpuSample::Extra e, std::uint64_t first,
                                     std::uint64_t last) const {
    if (!first_->has(e) || !prev_->has(e) || last < first) return std::nullopt;
    return last - first;
  }

  // The longest span over which the counter was seen not to move while the device drew power: a
  // lower bound on the counter's update period (core/energy_bound.h).
  void NoteCounterStill(const GpuSample& s) {
    const bool drawing = s.has(GpuSample::kPower) && s.power_draw_milliwatts > 0;
    if (last_energy_ && last_energy_->second == s.energy_millijoules && drawing) {
      still_ns_ += s.elapsed_ns - last_energy_->first;
      longest_still_ns_ = std::max(longest_still_ns_, still_ns_);
    } else {
      still_ns_ = 0;
    }
  }

  // The bounds of the figures in `e` (core/energy_bound.h): the counter's needs a ceiling (the
  // limit or the highest reading), the integral's the enforced limit (it is summed interval by
  // interval, each against the limit or its own readings when higher).
  void Bound(DeviceEnergy& e) const {
    std::optional<double> ceiling = CeilingW(limit_w_, max_power_w_);
    if (!ceiling) return;
    PowerSensor sensor;
    sensor.ceiling_w = *ceiling;
    if (e.counter_millijoules) {
      e.counter_bound_millijoules =
          1000.0 * CounterBoundJ(sensor, static_cast<double>(longest_still_ns_) * 1e-9);
    }
    if (e.integrated_millijoules && integral_bound_) {
      e.integrated_bound_millijoules = 1000.0 * integral_bound_->bound_j();
    }
    if (e.source == EnergySource::kCounter) e.bound_millijoules = e.counter_bound_millijoules;
    if (e.source == EnergySource::kIntegratedFallback)
      e.bound_millijoules = e.integrated_bound_millijoules;
  }

  DeviceEnergy Energy() const {
    DeviceEnergy e;
    if (!first_ || !prev_ || first_->elapsed_ns == prev_->elapsed_ns)
      return e;  // fewer than 2 samples
    // The counter over the first and last samples that have it.
    if (first_energy_ && last_energy_ && last_energy_->first > first_energy_->first &&
        last_energy_->second >= first_energy_->second) {
      e.counter_millijoules = last_energy_->second - first_energy_->second;
    }
    if (integrated_) e.integrated_millijoules = integral_mj_;
    if (e.counter_millijoules) {
      e.source = EnergySource::kCounter;
      e.millijoules = e.counter_millijoules;
      // Compared only when both cover the same span without a gap: else they measure different
      // things.
      bool same_span = integrated_ && !power_gap_ && first_power_ns_ == first_energy_->first &&
                       last_power_ns_ == last_energy_->first;
      if (*e.counter_millijoules > 0 && same_span) {
        double counter = static_cast<double>(*e.counter_millijoules);
        e.relative_difference = (integral_mj_ - counter) / counter;
      }
      Bound(e);
      if (same_span && e.counter_bound_millijoules && e.integrated_bound_millijoules) {
        e.disagreement =
            Disagree(static_cast<double>(*e.counter_millijoules), *e.counter_bound_millijoules,
                     integral_mj_, *e.integrated_bound_millijoules);
      }
    } else if (integrated_) {
      e.source = EnergySource::kIntegratedFallback;
      e.millijoules = static_cast<std::uint64_t>(std::llround(std::max(0.0, integral_mj_)));
      Bound(e);
    }
    return e;
  }

  AggregateBuilder agg_;
  StatBuilder power_, sm_util_, mem_util_, sm_clock_, mem_clock_, pcie_tx_, pcie_rx_;
  std::optional<std::uint64_t> max_mem_;
  std::optional<GpuSample> first_, prev_, prev_power_;
  double integral_mj_ = 0;
  std::optional<IntegralBound> integral_bound_;  // with a limit only
  std::optional<double> limit_w_, max_power_w_;
  std::int64_t still_ns_ = 0, longest_still_ns_ = 0;
  bool integrated_ = false;  // two consecutive samples with power seen
  bool power_gap_ = false;   // a sample without power between samples with it
  std::optional<std::int64_t> first_power_ns_, last_power_ns_;
  std::optional<std::pair<std::int64_t, std::uint64_t>> first_energy_,
      last_energy_;  // (time, counter)
  std::optional<std::map<std::string, std::int64_t>> throttle_;
  std::map<std::string, std::int64_t> slowdown_ns_;
  std::int64_t reasons_span_ns_ = 0;  // time after samples that had the reasons
};

std::vector<InstanceReport> DeriveInstances(const Run& run) {
  std::map<std::pair<std::uint32_t, std::uint32_t>,
           std::pair<Range<std::uint64_t>, std::optional<std::uint64_t>>>
      by;
  for (const InstanceSample& s : run.instance_samples) {
    auto& [used, total] = by[{s.device_index, s.gpu_instance_id}];
    if (s.memory_used_bytes) used.Add(*s.memory_used_bytes);
    if (s.memory_total_bytes && !total) total = s.memory_total_bytes;
  }
  for (const Entity& e : run.entities) {  // instances that never answered are listed too
    if (e.kind == EntityKind::kGpuInstance) by[{e.gpu, e.gpu_instance_id.value_or(0)}];
  }
  std::vector<InstanceReport> out;
  for (const auto& [key, value] : by) {
    InstanceReport r;
    r.device_index = key.first;
    r.gpu_instance_id = key.second;
    for (const Entity& e : run.entities) {
      if (e.kind == EntityKind::kGpuInstance && e.gpu == key.first &&
          e.gpu_instance_id == key.second) {
        r.profile = e.profile;
      }
    }
    const auto& [used, total] = value;
    r.sample_count = used.count();
    r.memory_used_min_bytes = used.min();
    r.memory_used_max_bytes = used.max();
    r.memory_used_mean_bytes = used.mean();
    r.memory_total_bytes = total;
    out.push_back(std::move(r));
  }
  return out;
}

ResourceReport DeriveResource(const Run& run) {
  ResourceReport r;
  const auto& s = run.resource_samples;
  r.sample_count = s.size();
  if (s.empty()) return r;
  std::uint64_t rss_min = s.front().rss_bytes, rss_max = rss_min;
  std::uint32_t th_min = s.front().thread_count, th_max = th_min;
  u128 rss_sum = 0;
  for (const ResourceSample& x : s) {
    rss_min = std::min(rss_min, x.rss_bytes);
    rss_max = std::max(rss_max, x.rss_bytes);
    rss_sum += x.rss_bytes;
    th_min = std::min(th_min, x.thread_count);
    th_max = std::max(th_max, x.thread_count);
  }
  r.rss_min_bytes = rss_min;
  r.rss_max_bytes = rss_max;
  r.rss_mean_bytes = static_cast<std::uint64_t>(rss_sum / s.size());
  r.rss_final_bytes = s.back().rss_bytes;
  r.thread_min = th_min;
  r.thread_max = th_max;
  double wall_s = static_cast<double>(s.back().elapsed_ns - s.front().elapsed_ns) * 1e-9;
  if (s.size() >= 2 && wall_s > 0 && run.clock_ticks_per_second > 0) {
    auto jiffies = [](const ResourceSample& x) {
      return x.cpu_user_jiffies + x.cpu_system_jiffies;
    };
    double used = static_cast<double>(jiffies(s.back())) - static_cast<double>(jiffies(s.front()));
    r.cpu_mean_percent = used / static_cast<double>(run.clock_ticks_per_second) / wall_s * 100.0;
  }
  if (run.clock_ticks_per_second > 0) {
    r.cpu_seconds = static_cast<double>(s.back().cpu_user_jiffies + s.back().cpu_system_jiffies) /
                    static_cast<double>(run.clock_ticks_per_second);
  }
  return r;
}

}  // namespace

void JudgeHealth(JobStats& s) {
  s.overall_health = "healthy";
  s.health_incidents.clear();
  if (s.ecc_dbe_errors.value_or(0) > 0) {
    s.health_incidents.push_back(std::to_string(*s.ecc_dbe_errors) + " double-bit ECC error(s)");
    s.overall_health = "failure";
  }
  if (!s.xids.empty()) {
    s.health_incidents.push_back(std::to_string(s.xids.size()) + " XID error(s)");
    s.overall_health = "failure";
  }
  if (s.pcie_replays.value_or(0) > 0) {
    s.health_incidents.push_back(std::to_string(*s.pcie_replays) + " PCIe replay(s)");
    if (s.overall_health == "healthy") s.overall_health = "warning";
  }
  // What could not be read is said, not counted as none.
  if (s.sample_count > 0) {
    if (!s.ecc_dbe_errors)
      s.health_incidents.push_back("double-bit ECC errors not readable: not part of the verdict");
    if (!s.pcie_replays)
      s.health_incidents.push_back("PCIe replays not readable: not part of the verdict");
  }
}

const char* EnergySourceName(EnergySource s) {
  return s == EnergySource::kCounter ? "counter" : "integrated_fallback";
}

std::string ClockReasonName(int bit) {
  static const char* const kNames[] = {"gpu_idle",
                                       "applications_clocks_setting",
                                       "sw_power_cap",
                                       "hw_slowdown",
                                       "sync_boost",
                                       "sw_thermal_slowdown",
                                       "hw_thermal_slowdown",
                                       "hw_power_brake_slowdown",
                                       "display_clock_setting"};
  if (bit >= 0 && bit < static_cast<int>(std::size(kNames))) return kNames[bit];
  return "bit_" + std::to_string(bit);
}

Report Derive(const Run& run) {
  Report report;
  AggregateBuilder cluster;
  std::map<std::uint32_t, DeviceBuilder> devices;
  // Every sampled GPU has its entry, even one lost before its first sample (its XIDs and
  // processes are still its job statistics).
  for (const DeviceInfo& d : run.devices) devices[d.index].SetLimit(d.power_limit_watts);
  for (const GpuSample& s : run.gpu_samples) {
    cluster.Add(s);
    devices[s.device_index].Add(s);
  }
  GpuReport& g = report.gpu;
  g.aggregates = cluster.Build();
  g.device_count = devices.size();
  bool any_integrated = false;
  bool every_bound = true;
  double bound_mj = 0;
  for (const auto& [index, builder] : devices) {
    DeviceReport d = builder.Build(index);
    for (const DeviceInfo& info : run.devices) {
      if (info.index == index) d.uuid = info.uuid;
    }
    for (const XidEvent& x : run.xid_events) {
      if (x.device_index == index) d.stats.xids.push_back(x);
    }
    for (const GpuProcess& p : run.gpu_processes) {
      if (p.device_index == index) d.stats.processes.push_back(p);
    }
    JudgeHealth(d.stats);
    if (d.energy.millijoules) {
      g.energy_millijoules = g.energy_millijoules.value_or(0) + *d.energy.millijoules;
      any_integrated = any_integrated || *d.energy.source == EnergySource::kIntegratedFallback;
      every_bound = every_bound && d.energy.bound_millijoules.has_value();
      bound_mj += d.energy.bound_millijoules.value_or(0);
    }
    g.per_device.push_back(std::move(d));
  }
  if (g.energy_millijoules) {
    g.energy_source = any_integrated ? EnergySource::kIntegratedFallback : EnergySource::kCounter;
    if (every_bound) g.energy_bound_millijoules = bound_mj;
  }
  g.per_instance = DeriveInstances(run);
  report.resource = DeriveResource(run);
  return report;
}

}  // namespace gpulse::report
