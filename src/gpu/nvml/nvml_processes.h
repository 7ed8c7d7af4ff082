// Per-process GPU usage of one NVML device, as `nvidia-smi pmon` shows it: the compute and graphics
// process lists (nvml_process_list.h) merged by PID, plus per-process SM/memory/encoder/decoder
// utilization from nvmlDeviceGetProcessUtilization. Listing processes costs milliseconds and holds
// the driver's global lock (research/vendors.md section 2), so a reader asks the driver at most
// once per kProcessListMinIntervalNs and answers from its cache in between.
//
// Not thread-safe: one owner thread (the backend's).
#pragma once

#include <cstdint>
#include <optional>

#include "core/device.h"
#include "gpu/nvml/nvml_api.h"

namespace gpulse::nvml {

class ProcessReader {
 public:
  ProcessReader(const NvmlApi* api, nvmlDevice_t handle) : api_(api), handle_(handle) {}

  // The device's processes. `now_mono_ns` decides whether the cache is fresh enough;
  // `now_unix_us` starts the utilization window on the first read (the driver's sample buffer is
  // read from one second before it).
  ProcessList Read(std::int64_t now_mono_ns, std::int64_t now_unix_us);

 private:
  ProcessList Refresh(std::int64_t now_mono_ns, std::int64_t now_unix_us);
  // Fills the utilization of `processes` from the driver's samples newer than last_seen_us_.
  void ApplyUtilization(std::vector<GpuProcess>& processes, std::string& source);

  const NvmlApi* api_;
  nvmlDevice_t handle_;
  std::optional<ProcessList> cached_;
  unsigned long long last_seen_us_ = 0;  // newest sample timestamp seen (0: none yet)
};

}  // namespace gpulse::nvml
