#include "gpu/nvml/nvml_processes.h"

#include <algorithm>
#include <map>
#include <vector>

#include "gpu/backend.h"
#include "gpu/nvml/nvml_errors.h"
#include "gpu/nvml/nvml_process_list.h"

namespace gpulse::nvml {
namespace {

constexpr unsigned kSampleSlack = 16;
constexpr long long kFirstWindowUs = 1'000'000;

// Adds one list's entries to `by_pid`, marking them compute or graphics.
void Merge(const RawProcessList& list, bool compute, std::map<unsigned, GpuProcess>& by_pid) {
  for (const RawProcess& raw : list.entries) {
    GpuProcess& p = by_pid[raw.pid];
    p.pid = raw.pid;
    (compute ? p.compute : p.graphics) = true;
    if (raw.used_memory_bytes) {
      p.used_memory_bytes = std::max(p.used_memory_bytes.value_or(0), *raw.used_memory_bytes);
    }
    if (raw.gpu_instance_id) p.gpu_instance_id = raw.gpu_instance_id;
    if (raw.compute_instance_id) p.compute_instance_id = raw.compute_instance_id;
  }
}

struct UtilSum {
  double sm = 0, mem = 0, enc = 0, dec = 0;
  int n = 0;
};

}  // namespace

ProcessList ProcessReader::Read(std::int64_t now_mono_ns, std::int64_t now_unix_us) {
  if (cached_ && now_mono_ns - cached_->t_mono_ns < gpu::kProcessListMinIntervalNs) return *cached_;
  if (last_seen_us_ == 0 && now_unix_us > kFirstWindowUs) {
    last_seen_us_ = static_cast<unsigned long long>(now_unix_us - kFirstWindowUs);
  }
  cached_ = Refresh(now_mono_ns, now_unix_us);
  return *cached_;
}

ProcessList ProcessReader::Refresh(std::int64_t now_mono_ns, std::int64_t /*now_unix_us*/) {
  ProcessList out;
  out.t_mono_ns = now_mono_ns;
  auto compute = ListProcesses(*api_, handle_, ProcessKind::kCompute);
  auto graphics = ListProcesses(*api_, handle_, ProcessKind::kGraphics);
  if (!compute && !graphics) {
    out.error = compute.error().message;
    if (graphics.error().message != compute.error().message)
      out.error += "; " + graphics.error().message;
    return out;
  }
  std::map<unsigned, GpuProcess> by_pid;
  if (compute) {
    Merge(*compute, true, by_pid);
    out.source = compute->source;
  } else {
    out.error = "compute processes: " + compute.error().message;
  }
  if (graphics) {
    Merge(*graphics, false, by_pid);
    out.source += (out.source.empty() ? "" : ", ") + graphics->source;
  } else if (graphics.error().code != ErrorCode::kUnavailable) {
    out.error +=
        (out.error.empty() ? "" : "; ") + ("graphics processes: " + graphics.error().message);
  }
  std::vector<GpuProcess> processes;
  processes.reserve(by_pid.size());
  for (const auto& [pid, p] : by_pid) processes.push_back(p);
  ApplyUtilization(processes, out.utilization_source);
  out.processes = std::move(processes);
  return out;
}

void ProcessReader::ApplyUtilization(std::vector<GpuProcess>& processes, std::string& source) {
  auto fn = api_->DeviceGetProcessUtilization;
  if (fn == nullptr || processes.empty()) return;
  unsigned count = 0;
  nvmlReturn_t rc = fn(handle_, nullptr, &count, last_seen_us_);
  // NOT_FOUND: no sample since last_seen_us_; NOT_SUPPORTED: e.g. a MIG-enabled GPU. Either way the
  // utilization stays absent rather than 0.
  if (rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_SUCCESS) return;
  std::vector<nvmlProcessUtilizationSample_t> samples(count + kSampleSlack);
  count = static_cast<unsigned>(samples.size());
  if (fn(handle_, samples.data(), &count, last_seen_us_) != NVML_SUCCESS) return;
  source = "nvmlDeviceGetProcessUtilization";
  std::map<unsigned, UtilSum> sums;
  for (unsigned i = 0; i < count && i < samples.size(); ++i) {
    const auto& s = samples[i];
    last_seen_us_ = std::max(last_seen_us_, s.timeStamp);
    // Values above 100 are driver noise (nvtop bug 110): dropped, not clamped.
    if (s.smUtil > 100 || s.memUtil > 100 || s.encUtil > 100 || s.decUtil > 100) continue;
    UtilSum& u = sums[s.pid];
    u.sm += s.smUtil;
    u.mem += s.memUtil;
    u.enc += s.encUtil;
    u.dec += s.decUtil;
    ++u.n;
  }
  for (GpuProcess& p : processes) {
    auto it = sums.find(p.pid);  // samples of PIDs not in the lists are dropped
    if (it == sums.end() || it->second.n == 0) continue;
    const UtilSum& u = it->second;
    p.sm_util = u.sm / u.n;
    p.mem_util = u.mem / u.n;
    p.enc_util = u.enc / u.n;
    p.dec_util = u.dec / u.n;
  }
}

}  // namespace gpulse::nvml
