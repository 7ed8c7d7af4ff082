#include "health/health_monitor.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/xid.h"

namespace gpulse::health {
namespace {

using Member = std::optional<double> GpuReading::*;

// How much a counter grew between the oldest point at or after `since_ms` that has it and the
// newest that has it; nullopt when fewer than two points have it.
template <typename Points>
std::optional<double> Growth(const Points& points, Member m, std::int64_t since_ms) {
  std::optional<double> first, last;
  for (const auto& p : points) {
    if (p.t_ms < since_ms || !(p.reading.*m)) continue;
    if (!first) first = *(p.reading.*m);
    last = *(p.reading.*m);
  }
  if (!first || !last) return std::nullopt;
  return *last - *first;
}

void Add(GpuHealth& h, Subsystem s, Verdict v, std::string message) {
  h.incidents.push_back({s, v, std::move(message)});
}

}  // namespace

HealthMonitor::HealthMonitor(std::int64_t window_ms) : window_ms_(window_ms) {}

void HealthMonitor::Observe(const GpuReading& r) {
  if (r.lost) lost_ = true;
  if (primed_) {
    for (std::uint64_t x : r.xids) xids_.push_back({r.t_ms, x});
  }
  primed_ = true;
  KeepNewest(latest_, r);
  const std::int64_t spacing = std::max<std::int64_t>(1000, window_ms_ / 3600);
  if (!points_.empty() && r.t_ms - points_.back().t_ms < spacing) {
    KeepNewest(points_.back().reading, r);
  } else {
    Point p{r.t_ms, r};
    p.reading.xids.clear();
    points_.push_back(std::move(p));
  }
  Trim(r.t_ms);
}

void HealthMonitor::set_window(std::int64_t window_ms) {
  window_ms_ = window_ms;
  if (!points_.empty()) Trim(points_.back().t_ms);
}

void HealthMonitor::Trim(std::int64_t now_ms) {
  const std::int64_t keep_from = now_ms - window_ms_;
  // The oldest point inside the window is the baseline of "grew within the window"; a point
  // exactly at the window's start counts as inside.
  while (!points_.empty() && points_.front().t_ms < keep_from) points_.pop_front();
  while (!xids_.empty() && xids_.front().t_ms < keep_from) xids_.pop_front();
}

GpuHealth HealthMonitor::Check(unsigned systems, unsigned gpu, std::int64_t now_ms) const {
  GpuHealth h;
  const std::int64_t window_start = now_ms - window_ms_;
  const GpuReading& r = latest_;
  if (lost_) {
    for (Subsystem s : AllSubsystems()) {
      if (systems & s)
        Add(h, s, Verdict::kFail,
            fmt::format("GPU {} is lost (fell off the bus or was reset)", gpu));
    }
  } else {
    if (systems & kPcie) {
      auto replays = Growth(points_, &GpuReading::pcie_replay, now_ms - kPcieReplayWindowMs);
      if (replays && *replays > kPcieReplaysPerMinute) {
        Add(h, kPcie, Verdict::kWarn,
            fmt::format("Detected more than {} PCIe replays per minute for GPU {}: {}",
                        kPcieReplaysPerMinute, gpu, *replays));
      }
    }
    if (systems & kMemory) {
      if (r.ecc_dbe_volatile && *r.ecc_dbe_volatile > 0) {
        Add(h, kMemory, Verdict::kFail,
            fmt::format("{} volatile double-bit ECC error(s) detected in GPU {}",
                        *r.ecc_dbe_volatile, gpu));
      }
      if (r.row_remap_failure && *r.row_remap_failure > 0) {
        Add(h, kMemory, Verdict::kFail, fmt::format("A row-remap failure occurred in GPU {}", gpu));
      }
      if (r.remapped_uncorrectable && *r.remapped_uncorrectable >= 512) {
        Add(h, kMemory, Verdict::kFail,
            fmt::format("{} rows remapped for uncorrectable errors in GPU {} (limit 512)",
                        *r.remapped_uncorrectable, gpu));
      }
      const double sbe = r.retired_sbe.value_or(0), dbe = r.retired_dbe.value_or(0);
      if (sbe + dbe >= 63 || dbe > 15) {
        Add(h, kMemory, Verdict::kFail,
            fmt::format("{} pages retired in GPU {} ({} for double-bit errors; limits 63 and 15)",
                        sbe + dbe, gpu, dbe));
      }
      if (r.retired_pending && *r.retired_pending > 0) {
        Add(h, kMemory, Verdict::kWarn,
            fmt::format("A page retirement is pending in GPU {}: reset the GPU to retire it", gpu));
      }
    }
    if ((systems & kInforom) && r.inforom_valid && *r.inforom_valid == 0) {
      Add(h, kInforom, Verdict::kWarn,
          fmt::format("A corrupt InfoROM has been detected in GPU {}.", gpu));
    }
    auto violation = [&](Subsystem s, Member m, std::string_view what) {
      if (!(systems & s)) return;
      auto grew = Growth(points_, m, window_start);
      if (grew && *grew > 0) {
        Add(h, s, Verdict::kWarn,
            fmt::format("{} violations in GPU {}: clocks were reduced for {:.0f} ms in the last "
                        "{} s",
                        what, gpu, *grew / 1e6, window_ms_ / 1000));
      }
    };
    violation(kThermal, &GpuReading::thermal_violation_ns, "Thermal");
    violation(kPower, &GpuReading::power_violation_ns, "Power");
    if (systems & kNvlink) {
      double crc = Growth(points_, &GpuReading::nvlink_crc_flit, window_start).value_or(0) +
                   Growth(points_, &GpuReading::nvlink_crc_data, window_start).value_or(0);
      double replay = Growth(points_, &GpuReading::nvlink_replay, window_start).value_or(0);
      double recovery = Growth(points_, &GpuReading::nvlink_recovery, window_start).value_or(0);
      if (recovery > 0) {
        Add(h, kNvlink, Verdict::kFail,
            fmt::format("{} NVLink recovery error(s) in GPU {} in the last {} s", recovery, gpu,
                        window_ms_ / 1000));
      }
      if (crc + replay > 0) {
        Add(h, kNvlink, Verdict::kWarn,
            fmt::format("NVLink errors in GPU {} in the last {} s: {} CRC, {} replay", gpu,
                        window_ms_ / 1000, crc, replay));
      }
    }
  }
  for (const XidEvent& e : xids_) {
    if (e.t_ms < window_start) continue;
    auto c = ClassifyXid(e.xid);
    if (!c || !(systems & c->system)) continue;
    Add(h, c->system, c->verdict,
        fmt::format("XID {} ({}) in GPU {}", e.xid, XidDescription(e.xid), gpu));
  }
  for (Subsystem s : AllSubsystems()) {
    if (!(systems & s)) continue;
    Verdict v = Verdict::kPass;
    for (const Incident& i : h.incidents) {
      if (i.system == s) v = Worst(v, i.verdict);
    }
    h.systems.emplace_back(s, v);
    h.overall = Worst(h.overall, v);
  }
  return h;
}

Verdict Overall(const std::vector<GpuHealth>& gpus) {
  Verdict v = Verdict::kPass;
  for (const GpuHealth& g : gpus) v = Worst(v, g.overall);
  return v;
}

}  // namespace gpulse::health
