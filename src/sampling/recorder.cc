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
constexpr FieldId kGrEngine = 1001, kSmActive = 1002, kTensor = 1004, kDram = 1005, kPcieTx = 1009,
                  kPcieRx = 1010;

struct ExtraMap {
  FieldId id;
  report::GpuSample::Extra bit;
  const char* key;  // the timeline's name for the reading (run.json)
};
// The five ADR-007 readings first, then the extras.
constexpr ExtraMap kRequired[] = {
    {kFbUsed, report::GpuSample::kMemoryUsed, "memory_used_bytes"},
    {kFbTotal, report::GpuSample::kMemoryTotal, "memory_total_bytes"},
    {kGpuUtil, report::GpuSample::kUtilization, "utilization_percent"},
    {kGpuTemp, report::GpuSample::kTemperature, "temperature_celsius"},
    {kPower, report::GpuSample::kPower, "power_draw_milliwatts"},
};
constexpr ExtraMap kExtras[] = {
    {kMemUtil, report::GpuSample::kMemoryUtilization, "memory_utilization_percent"},
    {kSmClock, report::GpuSample::kSmClock, "sm_clock_mhz"},
    {kMemClock, report::GpuSample::kMemoryClock, "memory_clock_mhz"},
    {kEnergy, report::GpuSample::kEnergy, "energy_millijoules"},
    {kReasons, report::GpuSample::kClocksEventReasons, "clocks_event_reasons"},
    {kPcieReplay, report::GpuSample::kPcieReplay, "pcie_replay_count"},
    {kEccSbe, report::GpuSample::kEccSbeVolatile, "ecc_sbe_volatile"},
    {kEccDbe, report::GpuSample::kEccDbeVolatile, "ecc_dbe_volatile"},
    {kGrEngine, report::GpuSample::kGrEngineActive, "gr_engine_active"},
    {kSmActive, report::GpuSample::kSmActive, "sm_active"},
    {kTensor, report::GpuSample::kTensorActive, "tensor_active"},
    {kDram, report::GpuSample::kDramActive, "dram_active"},
    {kPcieTx, report::GpuSample::kPcieTxBytes, "pcie_tx_bytes_per_second"},
    {kPcieRx, report::GpuSample::kPcieRxBytes, "pcie_rx_bytes_per_second"},
};
constexpr std::size_t kColumns = std::size(kRequired) + std::size(kExtras);

const ExtraMap& Column(std::size_t i) {
  return i < std::size(kRequired) ? kRequired[i] : kExtras[i - std::size(kRequired)];
}

// Catalogue positions of the timeline's columns, looked up once (ToGpuSample runs per device per
// tick).
struct TimelineIndex {
  std::array<FieldIndex, kColumns> columns;
};

const TimelineIndex& Indices() {
  static const TimelineIndex t = [] {
    TimelineIndex x{};
    for (std::size_t i = 0; i < kColumns; ++i) x.columns[i] = Idx(Column(i).id);
    return x;
  }();
  return t;
}

std::uint64_t U64(double v) { return v <= 0 ? 0 : static_cast<std::uint64_t>(std::llround(v)); }
std::uint32_t U32(double v) { return static_cast<std::uint32_t>(U64(v)); }
constexpr double kMiB = 1024.0 * 1024.0;  // the catalogue reports framebuffer in MiB
// A ratio kept to run.json's 4 decimals, so that a journal read back formats the same bytes.
float Ratio(double x) { return static_cast<float>(std::round(std::clamp(x, 0.0, 1.0) * 1e4) / 1e4); }

void Store(report::GpuSample& g, report::GpuSample::Extra bit, double x) {
  using G = report::GpuSample;
  g.present |= bit;
  switch (bit) {
    case G::kMemoryUsed: g.memory_used_bytes = U64(x * kMiB); break;
    case G::kMemoryTotal: g.memory_total_bytes = U64(x * kMiB); break;
    case G::kUtilization: g.utilization_percent = std::min<std::uint32_t>(U32(x), 100); break;
    case G::kTemperature: g.temperature_celsius = U32(x); break;
    case G::kPower: g.power_draw_milliwatts = U32(x * 1000.0); break;
    case G::kMemoryUtilization: g.memory_utilization_percent = U32(x); break;
    case G::kSmClock: g.sm_clock_mhz = U32(x); break;
    case G::kMemoryClock: g.memory_clock_mhz = U32(x); break;
    case G::kEnergy: g.energy_millijoules = U64(x); break;
    case G::kClocksEventReasons: g.clocks_event_reasons = U64(x); break;
    case G::kPcieReplay: g.pcie_replay_count = U32(x); break;
    case G::kEccSbeVolatile: g.ecc_sbe_volatile = U64(x); break;
    case G::kEccDbeVolatile: g.ecc_dbe_volatile = U64(x); break;
    case G::kGrEngineActive: g.gr_engine_active = Ratio(x); break;
    case G::kSmActive: g.sm_active = Ratio(x); break;
    case G::kTensorActive: g.tensor_active = Ratio(x); break;
    case G::kDramActive: g.dram_active = Ratio(x); break;
    case G::kPcieTxBytes: g.pcie_tx_bytes_per_second = U64(x); break;
    case G::kPcieRxBytes: g.pcie_rx_bytes_per_second = U64(x); break;
  }
}

}  // namespace

std::vector<FieldIndex> RequiredTimelineFields() {
  const TimelineIndex& t = Indices();
  return {t.columns.begin(), t.columns.begin() + std::size(kRequired)};
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
  const TimelineIndex& t = Indices();
  report::GpuSample g;
  g.elapsed_ns = elapsed_ns;
  g.device_index = device_index;
  for (std::size_t i = 0; i < kColumns; ++i) {
    FieldIndex f = t.columns[i];
    if (f < s.values.size() && s.values[f]) Store(g, Column(i).bit, *s.values[f]);
  }
  return g;
}

report::InstanceSample ToInstanceSample(const Sample& s, const Entity& e, std::int64_t elapsed_ns) {
  const TimelineIndex& t = Indices();
  report::InstanceSample g;
  g.elapsed_ns = elapsed_ns;
  g.device_index = e.gpu;
  g.gpu_instance_id = e.gpu_instance_id.value_or(0);
  auto bytes = [&](FieldIndex f) -> std::optional<std::uint64_t> {
    if (f >= s.values.size() || !s.values[f]) return std::nullopt;
    return U64(*s.values[f] * kMiB);
  };
  g.memory_used_bytes = bytes(t.columns[0]);
  g.memory_total_bytes = bytes(t.columns[1]);
  return g;
}

void NoteAbsences(const Sample& s, std::span<const FieldIndex> fields, std::uint32_t& had,
                  report::TimelineAbsence& a) {
  static_assert(kColumns <= 32, "`had` holds one bit per column");
  const TimelineIndex& t = Indices();
  for (std::size_t i = 0; i < kColumns; ++i) {
    FieldIndex f = t.columns[i];
    if (s.values[f]) had |= 1u << i;
    if (std::find(fields.begin(), fields.end(), f) == fields.end() || s.values[f]) continue;
    // A reading over the interval between two reads has none until its second sample (GPM: at
    // least 100 ms after the first): not a failed read.
    if (!(had & (1u << i)) && !s.unsupported[f] && FromTwoReads(FieldAt(f))) continue;
    std::string key = Column(i).key;
    if (f < s.unsupported.size() && s.unsupported[f]) {
      if (std::find(a.unsupported.begin(), a.unsupported.end(), key) == a.unsupported.end()) {
        a.unsupported.push_back(key);
      }
    } else {
      ++a.failed_samples[key];
    }
  }
}

void Recorder::SampleGpus(std::int64_t elapsed_ns, report::Run& run) {
  if (backend_ == nullptr) return;
  for (std::size_t i = 0; i < run.entities.size(); ++i) {
    const Entity& e = run.entities[i];
    if (e.state == EntityState::kLost && e.kind == EntityKind::kGpu && e.device_pos) {
      DrainLostXids(e, elapsed_ns, run);  // an XID queued at or just after the loss still counts
      continue;
    }
    if (!e.readable() || e.state == EntityState::kLost) continue;
    const std::int64_t asked = MonotonicNowNs();
    gpu::ReadEntity(*backend_, e, fields_, scratch_);
    // The reading's own time (issue 40): what the backend stamped when it read, when that lies
    // on this clock between the call and its return; else when it was asked.
    const std::int64_t read_at =
        scratch_.t_mono_ns >= asked && scratch_.t_mono_ns <= MonotonicNowNs() ? scratch_.t_mono_ns : asked;
    const std::int64_t at = read_at - t0_mono_;
    for (std::uint64_t xid : scratch_.xid_events) run.xid_events.push_back({at, e.gpu, xid});
    if (scratch_.state == DeviceState::kLost) {
      // A GPU and its instances are lost together, whichever of them saw it first.
      for (std::size_t j = 0; j < run.entities.size(); ++j) {
        if (run.entities[j].kind == EntityKind::kGpu && run.entities[j].gpu == e.gpu) {
          MarkLost(run.entities, j, scratch_.t_unix_ns, "GPU is lost (the driver answered GPU_IS_LOST)");
        }
      }
      continue;
    }
    if (e.kind == EntityKind::kGpuInstance) {
      run.instance_samples.push_back(ToInstanceSample(scratch_, e, at));
      continue;
    }
    if (had_.size() < run.entities.size()) had_.resize(run.entities.size(), 0);
    if (auto g = ToGpuSample(scratch_, e.gpu, at)) run.gpu_samples.push_back(*g);
    NoteAbsences(scratch_, fields_, had_[i], AbsenceOf(run, e.gpu));
  }
}

void Recorder::DrainLostXids(const Entity& e, std::int64_t elapsed_ns, report::Run& run) {
  static const FieldIndex kXidField = *IndexOf(kXid);
  if (std::find(fields_.begin(), fields_.end(), kXidField) == fields_.end()) return;
  backend_->Read(*e.device_pos, std::span<const FieldIndex>(&kXidField, 1), scratch_);
  for (std::uint64_t xid : scratch_.xid_events) run.xid_events.push_back({elapsed_ns, e.gpu, xid});
}

report::TimelineAbsence& Recorder::AbsenceOf(report::Run& run, std::uint32_t device_index) {
  for (report::TimelineAbsence& a : run.absences) {
    if (a.device_index == device_index) return a;
  }
  run.absences.push_back({device_index, {}, {}});
  return run.absences.back();
}

// Keeps, per (device, pid) of the workload's tree, the largest memory use seen, the mean SM
// utilization and when it was first and last listed: the job statistics' process table. Processes
// of other jobs on the same GPU are not the workload's and are left out.
void Recorder::SampleProcesses(std::int64_t elapsed_ns, const ProcessTreeSampler& tree, report::Run& run) {
  if (backend_ == nullptr) return;
  for (const Entity& e : run.entities) {
    if (e.kind != EntityKind::kGpu || !e.readable() || e.state == EntityState::kLost) continue;
    ProcessList list = backend_->Processes(*e.device_pos);
    if (!list.processes) continue;
    std::uint32_t index = e.gpu;
    for (const GpuProcess& p : *list.processes) {
      if (!Visible(run, index, p) || !tree.InTree(static_cast<pid_t>(p.pid))) continue;
      auto it = std::find_if(run.gpu_processes.begin(), run.gpu_processes.end(), [&](const report::GpuProcess& g) {
        return g.device_index == index && g.pid == p.pid;
      });
      if (it == run.gpu_processes.end()) {
        report::GpuProcess g;
        g.device_index = index;
        g.pid = p.pid;
        g.gpu_instance_id = p.gpu_instance_id;
        g.compute_instance_id = p.compute_instance_id;
        g.first_seen_ns = elapsed_ns;
        it = run.gpu_processes.insert(run.gpu_processes.end(), std::move(g));
      }
      if (p.used_memory_bytes) it->max_memory_bytes = std::max(it->max_memory_bytes.value_or(0), *p.used_memory_bytes);
      if (p.sm_util) {
        double n = static_cast<double>(it->sm_utilization_samples);
        it->sm_utilization_mean_percent = (it->sm_utilization_mean_percent.value_or(0) * n + *p.sm_util) / (n + 1);
        ++it->sm_utilization_samples;
      }
      it->last_seen_ns = elapsed_ns;
      // The latest name: a child seen between its fork and its exec still bears its parent's.
      if (std::string name = tree.NameOf(static_cast<pid_t>(p.pid)); !name.empty()) it->name = std::move(name);
    }
  }
}

// A process in a MIG instance belongs to the run when that instance is one of the run's entities
// (a workload that sees one instance is not charged with its neighbours' processes).
bool Recorder::Visible(const report::Run& run, std::uint32_t gpu, const GpuProcess& p) {
  if (!p.gpu_instance_id) return true;
  bool any_instance = false;
  for (const Entity& e : run.entities) {
    if (e.gpu != gpu || e.kind != EntityKind::kGpuInstance) continue;
    any_instance = true;
    if (e.gpu_instance_id == p.gpu_instance_id) return true;
  }
  return !any_instance;
}

void Recorder::SampleTree(std::int64_t elapsed_ns, ProcessTreeSampler& tree, bool final, report::Run& run) {
  if (!sample_process_) return;
  auto totals = final ? tree.ReadAndDiscover() : tree.Read();
  if (totals) {
    run.resource_samples.push_back({elapsed_ns, totals->rss_bytes, totals->utime_jiffies,
                                    totals->stime_jiffies, totals->threads, totals->processes});
  } else {
    sample_process_ = false;  // a failure on CMD itself ends process sampling, with the reason
    run.info.process_sampling_end_reason = totals.error().message;
  }
}

// One sample at start (tick 0), one per tick, and a final one once CMD has exited but before it is
// reaped (its zombie still shows its CPU times), so every run, however short, brackets its window.
sys::ExitStatus Recorder::Record(sys::ChildProcess& child, report::Run& run, report::JournalWriter* journal) {
  fields_ = RequiredTimelineFields();
  fields_.insert(fields_.end(), options_.optional_fields.begin(), options_.optional_fields.end());
  const std::int64_t t0_mono = MonotonicNowNs();
  t0_mono_ = t0_mono;
  run.info.start_unix_ns = UnixNowNs();
  run.info.sample_period_ns = options_.period_ns;
  run.info.include_descendants = options_.include_descendants;
  run.info.pid = child.pid();
  if (journal != nullptr) journal->Begin(run);

  // The tree is listed every tick at periods of 200 ms and more, else every 200 ms (read every tick).
  auto discover_every = static_cast<unsigned>(std::max<std::int64_t>(1, 200'000'000 / options_.period_ns));
  ProcessTreeSampler tree(options_.proc_root, child.pid(), options_.include_descendants, discover_every);
  sample_process_ = true;
  Ticker ticker(options_.period_ns, child_exited_);
  std::int64_t next_process_list = 0;
  for (;;) {
    bool woken = ticker.Next() < 0;  // CMD's SIGCHLD (or a stop) ended the wait
    bool exited = child.HasExited(/*block=*/woken);
    std::int64_t elapsed = MonotonicNowNs() - t0_mono;
    SampleTree(elapsed, tree, exited, run);
    SampleGpus(elapsed, run);
    if (elapsed >= next_process_list || exited) {
      SampleProcesses(elapsed, tree, run);
      // The backend answers from its cache for kProcessListMinIntervalNs after a read: asking at
      // exactly that interval later would get the old list back, so ask half a tick after it.
      next_process_list = elapsed + std::max(options_.process_list_period_ns, gpu::kProcessListMinIntervalNs) +
                          options_.period_ns / 2;
    }
    if (journal != nullptr) journal->Update(run);
    if (exited) break;
  }
  sys::ExitStatus status = child.Wait();
  run.info.duration_ns = MonotonicNowNs() - t0_mono;
  run.info.end_unix_ns = run.info.start_unix_ns + run.info.duration_ns;
  run.info.skipped_ticks = ticker.skipped();
  return status;
}

}  // namespace gpulse::sampling
