#include "sampling/recorder.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/clock.h"
#include "sampling/process_tree.h"
#include "sampling/ticker.h"

namespace gpulse::sampling {
namespace {

FieldIndex Idx(FieldId id) { return *IndexOf(id); }

// The catalogue ids behind the timeline's columns.
constexpr FieldId kFbUsed = 252, kFbTotal = 250, kGpuUtil = 203, kGpuTemp = 150, kPower = 155;
constexpr FieldId kMemUtil = 204, kSmClock = 100, kMemClock = 101, kEnergy = 156, kReasons = 112,
                  kPcieReplay = 202, kEccSbe = 310, kEccDbe = 311, kXid = 230;

struct ExtraMap {
  FieldId id;
  report::GpuSample::Extra bit;
};
constexpr ExtraMap kExtras[] = {
    {kMemUtil, report::GpuSample::kMemoryUtilization}, {kSmClock, report::GpuSample::kSmClock},
    {kMemClock, report::GpuSample::kMemoryClock},      {kEnergy, report::GpuSample::kEnergy},
    {kReasons, report::GpuSample::kClocksEventReasons}, {kPcieReplay, report::GpuSample::kPcieReplay},
    {kEccSbe, report::GpuSample::kEccSbeVolatile},     {kEccDbe, report::GpuSample::kEccDbeVolatile},
};

// Catalogue positions of the timeline's columns, looked up once (ToGpuSample runs per device per
// tick).
struct TimelineIndex {
  FieldIndex fb_used, fb_total, util, temp, power;
  std::array<FieldIndex, std::size(kExtras)> extras;
};

const TimelineIndex& Indices() {
  static const TimelineIndex t = [] {
    TimelineIndex x{Idx(kFbUsed), Idx(kFbTotal), Idx(kGpuUtil), Idx(kGpuTemp), Idx(kPower), {}};
    for (std::size_t i = 0; i < std::size(kExtras); ++i) x.extras[i] = Idx(kExtras[i].id);
    return x;
  }();
  return t;
}

std::uint64_t U64(double v) { return v <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(v)); }
std::uint32_t U32(double v) { return static_cast<std::uint32_t>(U64(v)); }

}  // namespace

std::vector<FieldIndex> RequiredTimelineFields() {
  const TimelineIndex& t = Indices();
  return {t.fb_used, t.fb_total, t.util, t.temp, t.power};
}

std::vector<FieldIndex> OptionalTimelineFields() {
  std::vector<FieldIndex> v;
  for (const ExtraMap& e : kExtras) v.push_back(Idx(e.id));
  v.push_back(Idx(kXid));
  return v;
}

std::optional<report::GpuSample> ToGpuSample(const Sample& s, std::uint32_t device_index,
                                             std::int64_t elapsed_ns) {
  if (s.state != DeviceState::kOk) return std::nullopt;
  const auto& v = s.values;
  const TimelineIndex& t = Indices();
  for (FieldIndex f : {t.fb_used, t.fb_total, t.util, t.temp, t.power}) {
    if (!v[f]) return std::nullopt;
  }
  constexpr double kMiB = 1024.0 * 1024.0;  // the catalogue reports framebuffer in MiB
  report::GpuSample g;
  g.elapsed_ns = elapsed_ns;
  g.device_index = device_index;
  g.memory_used_bytes = U64(*v[t.fb_used] * kMiB);
  g.memory_total_bytes = U64(*v[t.fb_total] * kMiB);
  g.utilization_percent = std::min<std::uint32_t>(U32(*v[t.util]), 100);
  g.temperature_celsius = U32(*v[t.temp]);
  g.power_draw_milliwatts = U32(*v[t.power] * 1000.0);
  for (std::size_t i = 0; i < std::size(kExtras); ++i) {
    const ExtraMap& e = kExtras[i];
    const auto& x = v[t.extras[i]];
    if (!x) continue;
    g.present |= e.bit;
    switch (e.bit) {
      case report::GpuSample::kMemoryUtilization: g.memory_utilization_percent = U32(*x); break;
      case report::GpuSample::kSmClock: g.sm_clock_mhz = U32(*x); break;
      case report::GpuSample::kMemoryClock: g.memory_clock_mhz = U32(*x); break;
      case report::GpuSample::kEnergy: g.energy_millijoules = U64(*x); break;
      case report::GpuSample::kClocksEventReasons: g.clocks_event_reasons = U64(*x); break;
      case report::GpuSample::kPcieReplay: g.pcie_replay_count = U32(*x); break;
      case report::GpuSample::kEccSbeVolatile: g.ecc_sbe_volatile = U64(*x); break;
      case report::GpuSample::kEccDbeVolatile: g.ecc_dbe_volatile = U64(*x); break;
    }
  }
  return g;
}

void Recorder::SampleGpus(std::int64_t elapsed_ns, report::Run& run) {
  if (backend_ == nullptr) return;
  const auto& devices = backend_->info().devices;
  for (std::size_t pos : positions_) {
    backend_->Read(pos, fields_, scratch_);
    for (std::uint64_t xid : scratch_.xid_events) run.xid_events.push_back({elapsed_ns, devices[pos].index, xid});
    if (auto g = ToGpuSample(scratch_, devices[pos].index, elapsed_ns)) run.gpu_samples.push_back(*g);
  }
}

// Keeps, per (device, pid), the largest memory use seen: the job statistics' process table.
void Recorder::SampleProcesses(report::Run& run) {
  if (backend_ == nullptr) return;
  for (std::size_t pos : positions_) {
    ProcessList list = backend_->Processes(pos);
    if (!list.processes) continue;
    std::uint32_t index = backend_->info().devices[pos].index;
    for (const GpuProcess& p : *list.processes) {
      auto it = std::find_if(run.gpu_processes.begin(), run.gpu_processes.end(), [&](const report::GpuProcess& g) {
        return g.device_index == index && g.pid == p.pid;
      });
      if (it == run.gpu_processes.end()) {
        run.gpu_processes.push_back({index, p.pid, p.used_memory_bytes});
      } else if (p.used_memory_bytes) {
        it->max_memory_bytes = std::max(it->max_memory_bytes.value_or(0), *p.used_memory_bytes);
      }
    }
  }
}

sys::ExitStatus Recorder::Record(sys::ChildProcess& child, report::Run& run) {
  positions_ = options_.positions.value_or(std::vector<std::size_t>{});
  if (!options_.positions && backend_ != nullptr) {
    for (std::size_t pos = 0; pos < backend_->info().devices.size(); ++pos) positions_.push_back(pos);
  }
  fields_ = RequiredTimelineFields();
  fields_.insert(fields_.end(), options_.optional_fields.begin(), options_.optional_fields.end());
  const std::int64_t t0_mono = MonotonicNowNs();
  run.info.start_unix_ns = UnixNowNs();
  run.info.sample_period_ns = options_.period_ns;
  run.info.include_descendants = options_.include_descendants;

  ProcessTreeSampler tree(options_.proc_root, child.pid(), options_.include_descendants);
  bool sample_process = true;
  Ticker ticker(options_.period_ns, child_exited_);
  std::optional<sys::ExitStatus> status;
  std::int64_t next_process_list = 0;
  while (ticker.Next() >= 0) {
    if ((status = child.Poll())) break;
    std::int64_t elapsed = MonotonicNowNs() - t0_mono;
    if (sample_process) {
      auto totals = tree.Read();
      if (totals) {
        run.resource_samples.push_back({elapsed, totals->rss_bytes, totals->utime_jiffies,
                                        totals->stime_jiffies, totals->threads, totals->processes});
      } else if ((status = child.Poll())) {
        break;  // it exited (a zombie now reaped) between the two checks: a normal end
      } else {
        sample_process = false;  // a failure on CMD itself ends process sampling, with the reason
        run.info.process_sampling_end_reason = totals.error().message;
      }
    }
    SampleGpus(elapsed, run);
    if (elapsed >= next_process_list) {
      SampleProcesses(run);
      next_process_list = elapsed + options_.process_list_period_ns;
    }
  }
  if (!status) status = child.Wait();
  run.info.duration_ns = MonotonicNowNs() - t0_mono;
  run.info.end_unix_ns = run.info.start_unix_ns + run.info.duration_ns;
  run.info.skipped_ticks = ticker.skipped();
  return *status;
}

}  // namespace gpulse::sampling
