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

std::optional<double> Value(const Sample& s, FieldId id) {
  auto f = IndexOf(id);
  return f && *f < s.values.size() ? s.values[*f] : std::nullopt;
}

// A volatile ECC counter read now and before went back: the driver cleared it (a GPU reset).
bool WentBack(std::optional<double>& last, const std::optional<double>& now) {
  const bool back = last && now && *now < *last;
  if (now) last = now;
  return back;
}

}  // namespace

FaultBackend::FaultBackend(std::unique_ptr<gpu::Backend> inner, FaultOptions options)
    : inner_(std::move(inner)), options_(std::move(options)) {
  const SystemInfo& info = inner_->info();
  for (const DeviceInfo& d : info.devices) targets_.push_back({Pci(d.pci_bus_id), {}, {}, {}});
  for (const SkippedDevice& d : info.skipped) targets_.push_back({Pci(d.pci_bus_id), {}, {}, {}});
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
  // What the log holds now is from before this layer: NVML never delivers those events.
  std::vector<KmsgRecord> records;
  do {
    records = log_->Poll();
    for (const KmsgRecord& r : records) Dispatch(r, /*before_start=*/true);
  } while (records.size() >= KmsgSource::kMaxRecordsPerPoll && log_->stats().error.empty());
  (void)log_->TakeRestart();
  Update();
}

void FaultBackend::Dispatch(const KmsgRecord& r, bool before_start) {
  if ((r.priority >> 3) != 0) {  // not the kernel's: userspace writes get another facility
    if (r.message.find("Xid (") != std::string::npos) ++status_.foreign;
    return;
  }
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
    t->faults.FromKernelLog(rep, before_start);
    return;
  }
  if (auto s = ParseSxidLine(r.message)) {
    // One error is a line and then "Severity ..." and "Data {...}" lines with its code.
    if (s->text.starts_with("Severity ") || s->text.starts_with("Data {")) return;
    const std::string bus = fmt::format("{:04x}:{:02x}:{:02x}.{:x}", s->pci.domain, s->pci.bus,
                                        s->pci.device, s->pci.function);
    auto key = std::make_tuple(s->nvswitch, bus, s->sxid);
    if (auto it = sxids_.find(key); it != sxids_.end()) {
      ++it->second;
    } else if (sxids_.size() < kMaxSxidSeries) {
      sxids_.emplace(std::move(key), 1);
    }
  }
}

void FaultBackend::PollKernelLog() {
  if (!log_) return;
  std::vector<KmsgRecord> records = log_->Poll();
  if (log_->TakeRestart()) {
    for (Target& t : targets_) t.faults.NoteReboot();
  }
  for (const KmsgRecord& r : records) Dispatch(r, /*before_start=*/false);
  Update();
}

void FaultBackend::Update() {
  const KmsgSource::Stats& s = log_->stats();
  status_.records = s.records;
  status_.lost = s.lost;
  status_.malformed = s.malformed;
  status_.restarts = s.restarts;
  status_.error = s.error;  // the last poll's: a read that works again clears it
}

void FaultBackend::NoteReset(std::size_t pos) {
  if (pos < targets_.size()) targets_[pos].faults.NoteReset();
}

bool FaultBackend::Alive(std::uint32_t pid) const {
  struct stat st {};
  return ::stat(fmt::format("{}/{}", options_.procfs_root, pid).c_str(), &st) == 0;
}

void FaultBackend::Merge(Target& t, std::span<const FieldIndex> fields, Sample& out) {
  const std::int64_t now = UnixNowNs();
  for (std::uint64_t xid : out.xid_events) t.faults.FromNvml(xid, now);
  const bool sbe_back = WentBack(t.ecc_sbe, Value(out, 310));
  const bool dbe_back = WentBack(t.ecc_dbe, Value(out, 311));
  if (sbe_back || dbe_back) t.faults.NoteReset();
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
