#include "fault_state.h"

#include <algorithm>
#include <utility>

namespace gpulse::sim {

FaultState::FaultState(const Scenario& scenario)
    : scenario_(scenario), faults_(scenario.faults) {
  for (const Fault& f : faults_) {
    if (f.kind == FaultKind::kXid) xids_.push_back({f.at, f.device, f.xid});
  }
  std::stable_sort(xids_.begin(), xids_.end(),
                   [](const XidEvent& a, const XidEvent& b) { return a.at < b.at; });
}

void FaultState::Inject(const Fault& fault) {
  faults_.push_back(fault);
  if (fault.kind == FaultKind::kXid) {
    xids_.push_back({fault.at, fault.device, fault.xid, /*injected=*/true});
  }
}

bool FaultState::Lost(unsigned device, double t) const {
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kGpuLost && Active(f, t)) return true;
  }
  return false;
}

bool FaultState::NoPermission(unsigned device, double t) const {
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kNoPermission && Active(f, t)) return true;
  }
  return false;
}

bool FaultState::InforomCorrupt(unsigned device, double t) const {
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kInforomCorrupt && Active(f, t)) return true;
  }
  return false;
}

bool FaultState::NotSupported(unsigned device, Call call, double t) const {
  const auto bit = static_cast<size_t>(call);
  if (scenario_.devices[device].unsupported.test(bit)) return true;
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kNotSupported && f.calls.test(bit) &&
        Active(f, t)) {
      return true;
    }
  }
  return false;
}

unsigned long long FaultState::ThrottleReasons(unsigned device, double t) const {
  unsigned long long mask = 0;
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kThrottle && Active(f, t)) mask |= f.reasons;
  }
  return mask;
}

double FaultState::ThrottledSeconds(unsigned device, unsigned long long reasons, double t) const {
  std::vector<std::pair<double, double>> spans;  // [begin, end) clipped to [0, t]
  for (const Fault& f : faults_) {
    if (f.device != device || f.kind != FaultKind::kThrottle || (f.reasons & reasons) == 0) {
      continue;
    }
    const double end = std::min(t, f.until.value_or(t));
    if (f.at < end) spans.emplace_back(f.at, end);
  }
  std::sort(spans.begin(), spans.end());
  double total = 0, covered_to = 0;
  for (const auto& [begin, end] : spans) {
    const double from = std::max(begin, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

std::optional<GpmFaultMode> FaultState::Gpm(unsigned device, double t) const {
  for (const Fault& f : faults_) {
    if (f.device == device && f.kind == FaultKind::kGpm && Active(f, t)) return f.gpm_mode;
  }
  return std::nullopt;
}

CounterValues FaultState::Counters(unsigned device, double t) const {
  const sim::Counters& base = scenario_.devices[device].counters;
  CounterValues c;
  c.ecc_sbe_aggregate = base.ecc_sbe;
  c.ecc_dbe_aggregate = base.ecc_dbe;
  c.pcie_replay = base.pcie_replay;
  c.retired_sbe = base.retired_pages_sbe;
  c.retired_dbe = base.retired_pages_dbe;
  c.remapped_correctable = base.remapped_rows_correctable;
  c.remapped_uncorrectable = base.remapped_rows_uncorrectable;
  c.nvlink_crc_flit = base.nvlink_crc_flit;
  c.nvlink_crc_data = base.nvlink_crc_data;
  c.nvlink_replay = base.nvlink_replay;
  c.nvlink_recovery = base.nvlink_recovery;
  for (const Fault& f : faults_) {
    if (f.device != device || !Active(f, t)) continue;
    switch (f.kind) {
      case FaultKind::kEcc:
        c.ecc_sbe_volatile += f.sbe;
        c.ecc_dbe_volatile += f.dbe;
        c.ecc_sbe_aggregate += f.sbe;
        c.ecc_dbe_aggregate += f.dbe;
        break;
      case FaultKind::kPcieReplay:
        c.pcie_replay += f.count;
        break;
      case FaultKind::kRetiredPages:
        c.retired_sbe += f.sbe;
        c.retired_dbe += f.dbe;
        c.retired_pending = c.retired_pending || f.pending;
        break;
      case FaultKind::kRemappedRows:
        c.remapped_correctable += f.correctable;
        c.remapped_uncorrectable += f.uncorrectable;
        c.remap_pending = c.remap_pending || f.pending;
        c.remap_failure = c.remap_failure || f.failure;
        break;
      case FaultKind::kNvlinkErrors:
        c.nvlink_crc_flit += f.nvlink_crc_flit;
        c.nvlink_crc_data += f.nvlink_crc_data;
        c.nvlink_replay += f.nvlink_replay;
        c.nvlink_recovery += f.nvlink_recovery;
        break;
      default:
        break;
    }
  }
  return c;
}

}  // namespace gpulse::sim
