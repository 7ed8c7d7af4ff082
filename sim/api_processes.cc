// Process lists and per-process utilization: the compute and graphics lists in every version gpulse
// may call (v1 with 16-byte entries, _v2 and _v3 with 24-byte entries as current headers declare,
// nvmlDeviceGetRunningProcessDetailList with 32-byte entries) and nvmlDeviceGetProcessUtilization.
// A MIG handle lists only the processes in its instance.
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;
using gpulse::sim::Process;

namespace {

static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "the v1 process entry is 16 bytes");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "the _v2 process entry is 24 bytes");
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "the detail entry is 32 bytes");

// The driver's process-utilization sampling period (the encoder/decoder one, 167 ms).
constexpr double kSamplePeriodS = 1.0 / 6.0;

enum class Kind { kCompute, kGraphics, kMps };

// The descendants of this process (the one that loaded the simulator), breadth first, from
// /proc/PID/task/TID/children.
std::vector<unsigned> Descendants() {
  std::vector<unsigned> out, queue{static_cast<unsigned>(getpid())};
  for (std::size_t i = 0; i < queue.size() && queue.size() < 4096; ++i) {
    std::ifstream tasks("/proc/" + std::to_string(queue[i]) + "/task/" + std::to_string(queue[i]) + "/children");
    unsigned child = 0;
    while (tasks >> child) {
      queue.push_back(child);
      out.push_back(child);
    }
  }
  return out;
}

// The scenario's processes, a `pid: workload` entry expanded into the workload's processes.
std::vector<Process> Expanded(const std::vector<Process>& spec) {
  std::vector<Process> out;
  for (const Process& p : spec) {
    if (!p.workload) {
      out.push_back(p);
      continue;
    }
    for (unsigned pid : Descendants()) {
      Process q = p;
      q.pid = pid;
      out.push_back(q);
    }
  }
  return out;
}

std::vector<Process> Listed(const DeviceCtx& c, Kind kind) {
  std::vector<Process> out;
  if (kind == Kind::kMps) return out;  // the simulator runs no MPS server
  for (const Process& p : Expanded(c.spec().processes)) {
    if (c.is_mig() && (p.gpu_instance_id != c.mig().gpu_instance_id ||
                       p.compute_instance_id != c.mig().compute_instance_id)) {
      continue;
    }
    if (kind == Kind::kCompute ? p.compute : p.graphics) out.push_back(p);
  }
  return out;
}

void Fill(const Process& p, nvmlProcessInfo_v1_t& e) { e = {p.pid, p.used_memory_mib << 20}; }
void Fill(const Process& p, nvmlProcessInfo_v2_t& e) {
  e = {p.pid, p.used_memory_mib << 20, p.gpu_instance_id, p.compute_instance_id};
}
void Fill(const Process& p, nvmlProcessDetail_v1_t& e) {
  e = {p.pid, p.used_memory_mib << 20, p.gpu_instance_id, p.compute_instance_id, 0};
}

// The count-then-fill protocol of the _v2/_v3/v1 calls: a count smaller than needed is set to the
// needed count with INSUFFICIENT_SIZE; entries past the count are not touched.
template <typename Entry>
nvmlReturn_t List(nvmlDevice_t device, unsigned* count, Entry* infos, Kind kind) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::vector<Process> list = Listed(c, kind);
    const auto needed = static_cast<unsigned>(list.size());
    if (*count < needed) {
      *count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (needed > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < needed; ++i) Fill(list[i], infos[i]);
    *count = needed;
    return NVML_SUCCESS;
  });
}

unsigned Percent(const std::optional<double>& v) {
  return v ? static_cast<unsigned>(std::lround(*v)) : 0;
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                    unsigned* count,
                                                                    nvmlProcessInfo_v1_t* infos) {
  return List(device, count, infos, Kind::kCompute);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(
    nvmlDevice_t device, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  return List(device, count, infos, Kind::kCompute);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t device, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  return List(device, count, infos, Kind::kCompute);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                                     unsigned* count,
                                                                     nvmlProcessInfo_v1_t* infos) {
  return List(device, count, infos, Kind::kGraphics);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(
    nvmlDevice_t device, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  return List(device, count, infos, Kind::kGraphics);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(
    nvmlDevice_t device, unsigned* count, nvmlProcessInfo_v2_t* infos) {
  return List(device, count, infos, Kind::kGraphics);
}

GPULSE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t device, nvmlProcessDetailList_v1_t* list) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (list == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (list->version != nvmlProcessDetailList_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (nvmlReturn_t r = c.Gate(Call::kProcessDetailList); r != NVML_SUCCESS) return r;
    Kind kind;
    switch (list->mode) {
      case NVML_PROCESS_MODE_COMPUTE:
        kind = Kind::kCompute;
        break;
      case NVML_PROCESS_MODE_GRAPHICS:
        kind = Kind::kGraphics;
        break;
      case NVML_PROCESS_MODE_MPS:
        kind = Kind::kMps;
        break;
      default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    std::vector<Process> procs = Listed(c, kind);
    const auto needed = static_cast<unsigned>(procs.size());
    if (list->numProcArrayEntries < needed || (needed > 0 && list->procArray == nullptr)) {
      list->numProcArrayEntries = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < needed; ++i) Fill(procs[i], list->procArray[i]);
    list->numProcArrayEntries = needed;
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t
nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                unsigned* count, unsigned long long last_seen_us) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kProcessUtilization); r != NVML_SUCCESS) return r;
    // One sample per sampled process at the latest sampling instant.
    const double stamp_t = std::floor(c.t / kSamplePeriodS) * kSamplePeriodS;
    const auto stamp = static_cast<unsigned long long>(c.sim.UnixMicros(stamp_t));
    std::vector<Process> sampled;
    for (const Process& p : Expanded(c.spec().processes)) {
      if (p.sm_util || p.mem_util || p.enc_util || p.dec_util) sampled.push_back(p);
    }
    if (sampled.empty() || stamp <= last_seen_us) return NVML_ERROR_NOT_FOUND;
    const auto needed = static_cast<unsigned>(sampled.size());
    if (utilization == nullptr || *count < needed) {
      *count = needed;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < needed; ++i) {
      const Process& p = sampled[i];
      utilization[i] = {p.pid,
                        stamp,
                        Percent(p.sm_util),
                        Percent(p.mem_util),
                        Percent(p.enc_util),
                        Percent(p.dec_util)};
    }
    *count = needed;
    return NVML_SUCCESS;
  });
}
