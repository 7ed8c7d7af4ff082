// `gpulse ps`: every GPU process joined with what procfs says about it, and the per-container,
// per-pod and per-Slurm-job aggregates operators ask for (shared/seeds/004: which GPU a pod runs on, its GPU memory
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
  std::vector<Group> jobs;  // Slurm jobs (id: the job id; its steps are one job)
  std::vector<DeviceProcesses> devices;
};

// What procfs says about every PID in `lists`. Without a procfs tree (simulated GPUs list made-up
// PIDs) each PID is anonymous and its error says why. `facts`: ReadProcessInfo's.
std::map<unsigned, ProcessInfo> ReadListedProcesses(std::span<const ProcessList> lists,
                                                    const std::optional<sys::RootedFs>& proc,
                                                    ProcFacts facts = ProcFacts::kAll);

// ReadListedProcesses for a reader that lists processes again and again (the exporter): what procfs
// said of a PID is kept while the PID stays listed, so only new PIDs are read, and a kept one again
// once it is `max_age_ns` old (bounding how long a reused PID could keep its predecessor's facts);
// a PID whose read said something is missing (it had exited, a file was unreadable) is read again
// the next time; a PID no longer listed is forgotten.
//
// Thread-safety: one caller at a time.
class ListedProcessCache {
 public:
  ListedProcessCache(std::optional<sys::RootedFs> proc, ProcFacts facts, std::int64_t max_age_ns)
      : proc_(std::move(proc)), facts_(facts), max_age_ns_(max_age_ns) {}

  // What procfs says of every PID in `lists` at `now_ns`; reads counts the PIDs read this time.
  const std::map<unsigned, ProcessInfo>& Update(std::span<const ProcessList> lists,
                                                std::int64_t now_ns);
  std::size_t last_reads() const { return last_reads_; }

 private:
  std::optional<sys::RootedFs> proc_;
  ProcFacts facts_;
  std::int64_t max_age_ns_;
  std::map<unsigned, ProcessInfo> procs_;
  std::map<unsigned, std::int64_t> read_at_ns_;
  std::size_t last_reads_ = 0;
};

// `lists` is parallel to info.devices; `procs` holds what procfs said about each PID listed.
PsReport Attribute(const SystemInfo& info, std::span<const ProcessList> lists,
                   const std::map<unsigned, ProcessInfo>& procs);

}  // namespace gpulse::identity
