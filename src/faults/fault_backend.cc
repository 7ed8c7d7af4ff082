#include "faults/fault_backend.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include "core/clock.h"

namespace gpulse::faults {
namespace {

std::optional<PciAddress> Pci(const std::string& bus_id) {
  return bus_id.empty() ? std::nullopt : ParsePciAddress(bus_id);
}

bool XidWanted(std::span<const FieldIndex> fields) {
  for (FieldIndex f : fields) {
    if (FieldAt(f).nvml == NvmlSource::kLastXid) return true;
  }
  return false;
}

std::optional<double> VolatileEcc(const Sample& s) {
  auto sbe = IndexOf(310), dbe = IndexOf(311);
  if (!sbe || !dbe || s.values.size() <= std::max(*sbe, *dbe)) return std::nullopt;
  const auto& a = s.values[*sbe];
  const auto& b = s.values[*dbe];
  if (!a && !b) return std::nullopt;
  return a.value_or(0) + b.value_or(0);
}

}  // namespace

FaultBackend::FaultBackend(std::unique_ptr<gpu::Backend> inner, FaultOptions options)
    : inner_(std::move(inner)), options_(std::move(options)) {
  const SystemInfo& info = inner_->info();
  for (const DeviceInfo& d : info.devices) targets_.push_back({Pci(d.pci_bus_id), {}, {}});
  for (const SkippedDevice& d : info.skipped) targets_.push_back({Pci(d.pci_bus_id), {}, {}});
  start_usec_ = MonotonicNowNs() / 1000;
  boot_unix_ns_ = UnixNowNs() - MonotonicNowNs();
  status_.path = options_.kernel_log;
  if (options_.kernel_log.empty()) return;
  auto log = KmsgSource::Open(options_.kernel_log);
  if (!log) {
    status_.error = log.error().message;
    return;
  }
  log_ = std::move(*log);
  status_.readable = true;
}

void FaultBackend::Dispatch(const KmsgRecord& r) {
  if (auto x = ParseXidLine(r.message)) {
    ++status_.xid_lines;
    Target* t = nullptr;
    for (Target& c : targets_) {
      if (c.pci && c.pci->domain == x->pci.domain && c.pci->bus == x->pci.bus &&
          c.pci->device == x->pci.device) {
        t = &c;
        break;
      }
    }
    if (t == nullptr) {
      ++status_.unmatched;
      return;
    }
    XidReport rep;
    rep.xid = x->xid;
    rep.t_unix_ns = boot_unix_ns_ + r.usec * 1000;
    rep.pid = x->pid;
    rep.pid_alive = x->pid && Alive(*x->pid);
    rep.text = x->text;
    t->faults.FromKernelLog(rep, r.usec < start_usec_);
    return;
  }
  if (auto s = ParseSxidLine(r.message)) {
    const std::string bus = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", s->pci.domain, s->pci.bus,
                                        s->pci.device, s->pci.function);
    ++sxids_[{s->nvswitch, bus, s->sxid}];
  }
}

void FaultBackend::PollKernelLog() {
  if (!log_) return;
  std::vector<KmsgRecord> records = log_->Poll();
  if (log_->TakeRestart()) {
    for (Target& t : targets_) t.faults.NoteReboot();
    start_usec_ = -1;  // the new log began after this layer did: every record is since its start
  }
  for (const KmsgRecord& r : records) Dispatch(r);
  const KmsgSource::Stats& s = log_->stats();
  status_.records = s.records;
  status_.lost = s.lost;
  status_.malformed = s.malformed;
  status_.restarts = s.restarts;
  if (!s.error.empty()) status_.error = s.error;
}

bool FaultBackend::Alive(std::uint32_t pid) const {
  struct stat st {};
  return ::stat(fmt::format("{}/{}", options_.procfs_root, pid).c_str(), &st) == 0;
}

void FaultBackend::Merge(Target& t, std::span<const FieldIndex> fields, Sample& out) {
  const std::int64_t now = UnixNowNs();
  for (std::uint64_t xid : out.xid_events) t.faults.FromNvml(xid, now);
  if (auto ecc = VolatileEcc(out)) {
    if (t.ecc_volatile && *ecc < *t.ecc_volatile) t.faults.NoteReset();
    t.ecc_volatile = ecc;
  }
  t.faults.ClearExited([this](std::uint32_t pid) { return Alive(pid); });
  out.xid_events = t.faults.TakeNewEvents();
  if (XidWanted(fields)) {
    out.xid_counts = t.faults.Counts();
    if (auto last = t.faults.last_xid()) {
      for (FieldIndex f : fields) {
        if (FieldAt(f).nvml == NvmlSource::kLastXid) out.values[f] = static_cast<double>(*last);
      }
    }
  }
  out.recommended_action = t.faults.Recommended();
}

void FaultBackend::Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) {
  PollKernelLog();
  inner_->Read(pos, fields, out);
  Merge(targets_[pos], fields, out);
}

void FaultBackend::ReadInstance(std::size_t pos, std::size_t mig_pos,
                                std::span<const FieldIndex> fields, Sample& out) {
  inner_->ReadInstance(pos, mig_pos, fields, out);
}

void FaultBackend::ReadSkipped(std::size_t skipped_pos, std::span<const FieldIndex> fields,
                               Sample& out) {
  inner_->ReadSkipped(skipped_pos, fields, out);
  PollKernelLog();
  const std::size_t at = inner_->info().devices.size() + skipped_pos;
  if (at < targets_.size()) Merge(targets_[at], fields, out);
}

void FaultBackend::PrimeProfiling(std::span<const FieldIndex> fields) {
  inner_->PrimeProfiling(fields);
}

Status FaultBackend::ResetGpu(std::size_t pos) {
  Status s = inner_->ResetGpu(pos);
  if (s.ok() && pos < targets_.size()) targets_[pos].faults.NoteReset();
  return s;
}

Status FaultBackend::InjectFault(std::size_t pos, std::string_view fault) {
  return inner_->InjectFault(pos, fault);
}

KernelLogStatus FaultBackend::kernel_log() const { return status_; }

std::vector<SxidCount> FaultBackend::sxids() const {
  std::vector<SxidCount> out;
  for (const auto& [key, n] : sxids_) {
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  }
  return out;
}

FaultBackend* AsFaultBackend(gpu::Backend& backend) {
  return dynamic_cast<FaultBackend*>(&backend);
}

const FaultBackend* AsFaultBackend(const gpu::Backend& backend) {
  return dynamic_cast<const FaultBackend*>(&backend);
}

}  // namespace gpulse::faults
