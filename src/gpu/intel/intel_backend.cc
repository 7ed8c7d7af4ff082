#include "gpu/intel/intel_backend.h"

#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "gpu/intel/drm_clients.h"
#include "gpu/intel/intel_cards.h"
#include "sys/rooted_fs.h"

namespace gpulse::gpu::intel {
namespace {

using drm::ReadOutcome;
using drm::SysfsFile;

// The last energy counter reading of a device, for power by difference.
struct EnergyMark {
  std::uint64_t uj = 0;
  std::int64_t t_mono_ns = 0;
};

class IntelBackend final : public Backend {
 public:
  IntelBackend(std::vector<IntelCard> cards, std::string root, std::string procfs_root,
               IntelClocks clocks)
      : cards_(std::move(cards)), clocks_(std::move(clocks)), energy_(cards_.size()) {
    info_.backend = "intel";
    info_.library = std::move(root);
    for (const IntelCard& c : cards_) info_.devices.push_back(c.info);
    if (!procfs_root.empty()) clients_.emplace(std::move(procfs_root));
  }

  const SystemInfo& info() const override { return info_; }
  const ReadStats& stats() const override { return stats_; }
  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override;
  ProcessList Processes(std::size_t pos) override;
  void PrimeProcesses() override;

 private:
  // Whether a read of field `f` gave a value; else the field is marked
  // unsupported (missing file) or the read counted as a failed call (read
  // error).
  bool Accounted(ReadOutcome outcome, FieldIndex f, Sample& out);
  // The energy counter (µJ) this tick, read once however many fields want it.
  void ReadEnergy(std::size_t pos, std::span<const FieldIndex> fields, Sample& out);
  void ReadUtilization(const IntelCard& card, FieldIndex f, Sample& out);

  std::vector<IntelCard> cards_;
  IntelClocks clocks_;
  std::vector<std::optional<EnergyMark>> energy_;
  std::optional<DrmClientTracker> clients_;
  SystemInfo info_;
  ReadStats stats_;
};

bool IntelBackend::Accounted(ReadOutcome outcome, FieldIndex f, Sample& out) {
  switch (outcome) {
    case ReadOutcome::kOk:
      return true;
    case ReadOutcome::kMissing:
      out.unsupported[f] = true;
      ++stats_.unsupported_calls;
      return false;
    case ReadOutcome::kFailed:
      ++stats_.failed_calls;
      return false;
  }
  return false;
}

void IntelBackend::ReadEnergy(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) {
  std::optional<FieldIndex> power, energy;
  for (FieldIndex f : fields) {
    SysfsSource s = FieldAt(f).intel;
    if (s == SysfsSource::kPower) power = f;
    if (s == SysfsSource::kEnergy) energy = f;
  }
  if (!power && !energy) return;
  IntelCard& card = cards_[pos];
  std::uint64_t uj = 0;
  switch (card.energy_uj.ReadUint(uj)) {
    case ReadOutcome::kMissing:
      if (power) out.unsupported[*power] = true;
      if (energy) out.unsupported[*energy] = true;
      ++stats_.unsupported_calls;
      return;
    case ReadOutcome::kFailed:
      ++stats_.failed_calls;
      return;
    case ReadOutcome::kOk:
      break;
  }
  if (energy) {
    const std::uint64_t mj = uj / 1000;  // µJ → whole mJ, the counter's unit
    out.values[*energy] = static_cast<double>(mj);
  }
  std::optional<EnergyMark>& last = energy_[pos];
  if (power && last && uj >= last->uj && out.t_mono_ns > last->t_mono_ns) {
    const double joules = static_cast<double>(uj - last->uj) / 1e6;
    const double seconds = static_cast<double>(out.t_mono_ns - last->t_mono_ns) / 1e9;
    out.values[*power] = joules / seconds;
  }
  // A counter that went backwards (driver reload, reset) starts a new baseline:
  // absent this tick.
  last = EnergyMark{uj, out.t_mono_ns};
}

void IntelBackend::ReadUtilization(const IntelCard& card, FieldIndex f, Sample& out) {
  if (!clients_) {
    out.unsupported[f] = true;  // no procfs to read fdinfo from (simulated without --procfs-root)
    ++stats_.unsupported_calls;
    return;
  }
  if (clients_->Refresh(out.t_mono_ns) == DrmClientTracker::RefreshStatus::kFailed) {
    ++stats_.failed_calls;
    return;
  }
  if (auto util = clients_->DeviceUtilization(card.pdev)) out.values[f] = std::round(*util);
}

void IntelBackend::Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) {
  out.t_mono_ns = clocks_.mono_ns();
  out.t_unix_ns = clocks_.unix_ns();
  out.state = DeviceState::kOk;
  out.values.assign(AllFields().size(), std::nullopt);
  out.unsupported.assign(AllFields().size(), false);
  out.xid_events.clear();
  out.xid_counts.clear();
  out.profiling_stuck = false;
  IntelCard& card = cards_.at(pos);
  ReadEnergy(pos, fields, out);
  std::uint64_t u = 0;
  std::int64_t i = 0;
  for (FieldIndex f : fields) {
    switch (FieldAt(f).intel) {
      case SysfsSource::kPower:
      case SysfsSource::kEnergy:
        break;  // ReadEnergy
      case SysfsSource::kClockGfx:
        if (Accounted(card.act_freq_mhz.ReadUint(u), f, out)) {
          out.values[f] = static_cast<double>(u);
        }
        break;
      case SysfsSource::kPowerCap:
        // 0 means PL1 is disabled: there is no enforced limit to report (absent,
        // not 0 W).
        if (Accounted(card.power_max_uw.ReadUint(u), f, out) && u > 0) {
          out.values[f] = static_cast<double>(u) / 1e6;
        }
        break;
      case SysfsSource::kTempGpu:
        if (Accounted(card.temp_gpu_mc.ReadInt(i), f, out)) {
          out.values[f] = std::round(static_cast<double>(i) / 1000.0);
        }
        break;
      case SysfsSource::kTempMemory:
        if (Accounted(card.temp_memory_mc.ReadInt(i), f, out)) {
          out.values[f] = std::round(static_cast<double>(i) / 1000.0);
        }
        break;
      case SysfsSource::kVramTotal:
        if (card.info.memory_total_bytes) {
          out.values[f] = static_cast<double>(*card.info.memory_total_bytes >> 20);  // MiB
        } else {
          out.unsupported[f] = true;
          ++stats_.unsupported_calls;
        }
        break;
      case SysfsSource::kBusyPercent:
        ReadUtilization(card, f, out);
        break;
      default:  // kNotRead, and sources only amdgpu has
        out.unsupported[f] = true;
        break;
    }
  }
}

void IntelBackend::PrimeProcesses() {
  if (!clients_) return;
  const std::int64_t now = clocks_.mono_ns();
  clients_->Prime(now);
  SleepUntilMonotonicNs(MonotonicNowNs() + kProcessPrimeNs);
}

ProcessList IntelBackend::Processes(std::size_t pos) {
  const IntelCard& card = cards_.at(pos);
  if (!clients_) {
    ProcessList list;
    list.t_mono_ns = clocks_.mono_ns();
    list.error = "no procfs root to read DRM clients' fdinfo from (simulated GPUs)";
    return list;
  }
  if (clients_->Refresh(clocks_.mono_ns()) == DrmClientTracker::RefreshStatus::kFailed) {
    ++stats_.failed_calls;
  }
  return clients_->Processes(card.pdev, !card.integrated);
}

}  // namespace

Result<std::unique_ptr<Backend>> OpenIntelBackend(const BackendOptions& options,
                                                  IntelClocks clocks) {
  if (!clocks.mono_ns) clocks.mono_ns = MonotonicNowNs;
  if (!clocks.unix_ns) clocks.unix_ns = UnixNowNs;
  std::string root = options.sysfs_root;
  std::string procfs_root = options.procfs_root;
  if (!options.simulate.empty()) {
    // Simulated GPUs are NVML's; only a sysfs tree the user named is read
    // beside them.
    if (root.empty()) return Unavailable("i915/xe: --simulate reads only an explicit --sysfs-root");
  } else {
    if (root.empty()) root = "/sys";
    if (procfs_root.empty()) procfs_root = "/proc";
  }
  sys::RootedFs sysfs(root);
  auto cards = FindIntelCards(sysfs);
  if (!cards.ok()) return cards.error();
  return std::unique_ptr<Backend>(
      std::make_unique<IntelBackend>(std::move(cards).value(), sysfs.PathOf("class/drm"),
                                     std::move(procfs_root), std::move(clocks)));
}

Result<std::unique_ptr<Backend>> OpenIntelBackend(const BackendOptions& options) {
  return OpenIntelBackend(options, IntelClocks{});
}

}  // namespace gpulse::gpu::intel
