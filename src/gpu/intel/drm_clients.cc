// Engine utilization and processes of i915/xe DRM clients between two procfs scans
// (drm_clients.h).
#include "gpu/intel/drm_clients.h"

#include <algorithm>
#include <map>
#include <utility>

#include "gpu/backend.h"

namespace gpulse::gpu::intel {
namespace {

using drm::DrmClient;
using drm::DrmEngineUsage;
using drm::DrmFdinfo;
using drm::DrmRegionMemory;

// The same client in another scan (by pdev and client id, which every listed client has).
const DrmClient* FindClient(const DrmClientScan& scan, const DrmClient& c) {
  for (const DrmClient& p : scan.clients) {
    if (*p.info.client_id == *c.info.client_id && p.info.pdev == c.info.pdev) return &p;
  }
  return nullptr;
}

// Counters that went backwards keep the larger previous value until a monotonic update is seen.
void CarryForward(const DrmClientScan& previous, DrmClientScan& current) {
  for (DrmClient& c : current.clients) {
    const DrmClient* p = FindClient(previous, c);
    if (p == nullptr) continue;
    for (DrmEngineUsage& e : c.info.engines) {
      const DrmEngineUsage* pe = p->info.Engine(e.name);
      if (pe == nullptr) continue;
      auto keep = [](std::optional<std::uint64_t>& now, const std::optional<std::uint64_t>& was) {
        if (now && was && *now < *was) now = was;
      };
      keep(e.busy_ns, pe->busy_ns);
      keep(e.cycles, pe->cycles);
      keep(e.total_cycles, pe->total_cycles);
    }
  }
}

// Busy fraction of each engine class of `c` between its reading in `previous` and now (1.0 = the
// whole class busy for the whole interval).
using ClassFractions = std::map<std::string, double, std::less<>>;

// False when the client is new since `previous` (it has no interval yet).
bool AddFractions(const DrmClientScan& previous, const DrmClientScan& current, const DrmClient& c,
                  ClassFractions& out) {
  const DrmClient* p = FindClient(previous, c);
  if (p == nullptr) return false;
  const double wall_ns = static_cast<double>(current.t_mono_ns - previous.t_mono_ns);
  for (const DrmEngineUsage& e : c.info.engines) {
    const DrmEngineUsage* pe = p->info.Engine(e.name);
    if (pe == nullptr) continue;
    double fraction = -1;
    if (e.busy_ns && pe->busy_ns && wall_ns > 0) {
      fraction = static_cast<double>(*e.busy_ns - *pe->busy_ns) / wall_ns;
    } else if (e.cycles && pe->cycles && e.total_cycles && pe->total_cycles &&
               *e.total_cycles > *pe->total_cycles) {
      fraction = static_cast<double>(*e.cycles - *pe->cycles) /
                 static_cast<double>(*e.total_cycles - *pe->total_cycles);
    }
    if (fraction < 0) continue;
    out[e.name] += fraction / static_cast<double>(std::max(1u, e.capacity));
  }
  return true;
}

double BusiestPercent(const ClassFractions& fractions) {
  double best = 0;
  for (const auto& [name, f] : fractions) best = std::max(best, f);
  return std::min(100.0, best * 100.0);
}

bool IsLocalRegion(std::string_view r) { return r.starts_with("local") || r.starts_with("vram"); }
bool IsSystemRegion(std::string_view r) { return r.starts_with("system"); }

// The client's memory in the regions `local_memory` selects: resident where printed, else total;
// nullopt when the client printed none of those regions.
std::optional<std::uint64_t> ClientMemory(const DrmFdinfo& info, bool local_memory) {
  std::optional<std::uint64_t> sum;
  for (const DrmRegionMemory& r : info.memory) {
    if (local_memory ? !IsLocalRegion(r.region) : !IsSystemRegion(r.region)) continue;
    auto bytes = r.resident_bytes ? r.resident_bytes : r.total_bytes;
    if (bytes) sum = sum.value_or(0) + *bytes;
  }
  return sum;
}

bool EngineUsed(const DrmFdinfo& info, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    const DrmEngineUsage* e = info.Engine(n);
    if (e != nullptr && ((e->busy_ns && *e->busy_ns > 0) || (e->cycles && *e->cycles > 0))) {
      return true;
    }
  }
  return false;
}

// Every i915/xe DRM client (any driver: the device's pdev selects them later) with a client id.
Result<DrmClientScan> Scan(const sys::RootedFs& proc, std::int64_t now_ns) {
  auto clients = drm::ScanDrmClients(proc, "");
  if (!clients.ok()) return clients.error();
  DrmClientScan scan;
  scan.t_mono_ns = now_ns;
  for (DrmClient& c : *clients) {
    if (c.info.client_id) scan.clients.push_back(std::move(c));
  }
  return scan;
}

}  // namespace

DrmClientTracker::DrmClientTracker(std::string procfs_root) : proc_(std::move(procfs_root)) {}

DrmClientTracker::RefreshStatus DrmClientTracker::Refresh(std::int64_t now_ns) {
  if (current_ && now_ns - current_->t_mono_ns < kProcessListMinIntervalNs &&
      !std::exchange(scan_next_, false)) {
    return RefreshStatus::kCached;
  }
  utilization_.clear();
  auto scan = Scan(proc_, now_ns);
  if (!scan.ok()) {
    error_ = scan.error().message;
    previous_.reset();
    current_.reset();
    return RefreshStatus::kFailed;
  }
  error_.clear();
  if (current_) CarryForward(*current_, *scan);
  previous_ = std::move(current_);
  current_ = std::move(scan).value();
  return RefreshStatus::kScanned;
}

void DrmClientTracker::Prime(std::int64_t now_ns) {
  scan_next_ = true;
  Refresh(now_ns);
  scan_next_ = true;
}

std::optional<double> DrmClientTracker::DeviceUtilization(std::string_view pdev) const {
  if (!previous_ || !current_) return std::nullopt;
  for (const auto& [device, percent] : utilization_) {
    if (device == pdev) return percent;  // computed once per scan
  }
  ClassFractions fractions;
  for (const DrmClient& c : current_->clients) {  // each client once, shared or not
    if (c.info.pdev == pdev) AddFractions(*previous_, *current_, c, fractions);
  }
  const double percent = BusiestPercent(fractions);
  utilization_.emplace_back(std::string(pdev), percent);
  return percent;
}

ProcessList DrmClientTracker::Processes(std::string_view pdev, bool local_memory) const {
  ProcessList list;
  list.source = "procfs fdinfo (drm-usage-stats)";
  if (!current_) {
    list.error = error_.empty() ? "no procfs scan yet" : error_;
    return list;
  }
  list.t_mono_ns = current_->t_mono_ns;
  if (previous_) list.utilization_source = "fdinfo engine busy time between two procfs scans";
  std::vector<GpuProcess> out;
  std::map<unsigned, ClassFractions> fractions;
  std::vector<unsigned> measured;  // pids with at least one client seen in both scans
  for (const DrmClient& c : current_->clients) {
    if (c.info.pdev != pdev) continue;
    for (unsigned pid : c.pids) {  // a client shared after fork counts for each process
      auto it =
          std::find_if(out.begin(), out.end(), [&](const GpuProcess& p) { return p.pid == pid; });
      if (it == out.end()) {
        out.push_back(GpuProcess{});
        it = std::prev(out.end());
        it->pid = pid;
      }
      if (auto bytes = ClientMemory(c.info, local_memory)) {
        it->used_memory_bytes = it->used_memory_bytes.value_or(0) + *bytes;
      }
      it->compute = it->compute || EngineUsed(c.info, {"compute", "ccs"});
      it->graphics = it->graphics || EngineUsed(c.info, {"render", "rcs"});
      if (previous_ && AddFractions(*previous_, *current_, c, fractions[pid])) {
        measured.push_back(pid);
      }
    }
  }
  for (GpuProcess& p : out) {
    if (std::find(measured.begin(), measured.end(), p.pid) != measured.end()) {
      p.sm_util = BusiestPercent(fractions[p.pid]);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const GpuProcess& a, const GpuProcess& b) { return a.pid < b.pid; });
  list.processes = std::move(out);
  return list;
}

}  // namespace gpulse::gpu::intel
