// `gpulse ps`: every GPU process joined with what procfs says about it, and the per-container and
// per-pod aggregates operators ask for (shared/seeds/004: which GPU a pod runs on, its GPU memory
// and compute use). Aggregates follow GPU Manager's arithmetic: memory adds up; SM utilization adds
// up per GPU and is capped at 100 there (several processes time-slicing one GPU cannot use more
// than all of it), then the per-GPU figures add up across GPUs.
// Missing is not zero: a memory sum with an unknown member is absent; an SM sum is over the
// processes that have a reading, and says how many had none.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device.h"
#include "identity/process_info.h"

namespace gpulse::identity {

struct PsRow {
  GpuProcess gpu;          // the driver's view
  unsigned gpu_index = 0;  // physical (NVML) index
  std::string gpu_uuid;
  std::optional<MigInstance> mig;  // the MIG instance the process runs in, when found
  ProcessInfo process;             // procfs's view
};

struct GroupGpu {
  unsigned index = 0;
  std::string uuid;
  std::optional<std::uint64_t> used_memory_bytes;
  std::optional<double> sm_util;  // sum over the processes with a reading, capped at 100
  unsigned sm_util_missing = 0;   // processes on this GPU without an SM reading
};

// A container or a pod.
struct Group {
  std::string id;                         // container id or pod uid
  std::optional<ContainerRef> container;  // containers: the container
  std::optional<PodRef> pod;  // pods: the pod; containers: the pod the container belongs to
  std::vector<std::string> containers;  // pods: their containers' ids
  std::vector<unsigned> pids;
  std::vector<GroupGpu> gpus;  // by index
  std::optional<std::uint64_t> used_memory_bytes;
  std::optional<double> sm_util;  // sum of the per-GPU figures
};

struct DeviceProcesses {
  unsigned index = 0;
  std::string uuid;
  std::string error;   // why the list is missing or partial ("" when complete)
  std::string source;  // the driver calls that answered
  std::string utilization_source;
  bool listed = false;  // the process list was read
};

struct PsReport {
  std::vector<PsRow> rows;  // by GPU index, then PID
  std::vector<Group> containers;
  std::vector<Group> pods;
  std::vector<DeviceProcesses> devices;
};

// What procfs says about every PID in `lists`. Without a procfs tree (simulated GPUs list made-up
// PIDs) each PID is anonymous and its error says why. `facts`: ReadProcessInfo's.
std::map<unsigned, ProcessInfo> ReadListedProcesses(std::span<const ProcessList> lists,
                                                    const std::optional<sys::RootedFs>& proc,
                                                    ProcFacts facts = ProcFacts::kAll);

// `lists` is parallel to info.devices; `procs` holds what procfs said about each PID listed.
PsReport Attribute(const SystemInfo& info, std::span<const ProcessList> lists,
                   const std::map<unsigned, ProcessInfo>& procs);

}  // namespace gpulse::identity
