// One read of every device, as the exporter serves it: taken on the coalesced probe's thread, then
// shared read-only by every response built from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/fields.h"
#include "faults/fault_backend.h"
#include "gpu/backend.h"

namespace gpulse::exporter {

struct DeviceReading {
  Sample sample;                   // t_mono_ns is when this entity was read
  std::uint64_t failed_calls = 0;  // transient failures in this read (0: the read succeeded)
  bool readable = true;            // the entity has readings of its own (a GPU or GPU instance)
};

// Kubernetes or Slurm mode: one holder's use of one GPU or GPU instance, from NVML's per-process
// data (docs/adr/0022-per-pod-usage.md). A holder is a container (or, where its container cannot be
// told, a pod) in Kubernetes mode and a job in Slurm mode.
struct HolderUsage {
  std::size_t entity = 0;  // position in BuildEntities(SystemInfo)
  std::string labels;      // rendered: pod, namespace[, container]; or hpc_job
  std::optional<std::uint64_t> memory_bytes;
  std::optional<double> sm_util;      // percent, capped at 100
  std::optional<double> sm_share;     // this holder's SM over every process's on the entity
  std::optional<double> power_watts;  // the entity's power × sm_share (ApplyPower)
  // power_watts integrated over the reads since this (entity, holder) first appeared: a counter
  // (UsageEnergyIntegrator); absent where no integrator ran (`--once`).
  std::optional<double> energy_joules;
};

// --hpc-job-mapping-dir (hpc_job_mapping.h): the directory's state at a read, for the self metrics.
struct JobMappingStatus {
  bool dir_present = false;
  std::uint64_t failures_total = 0;  // files that could not be used, since start
};

struct Snapshot {
  std::int64_t start_mono_ns = 0;              // when the read began
  std::int64_t duration_ns = 0;                // how long reading every entity took
  std::vector<FieldIndex> fields;              // what was asked for
  std::vector<DeviceReading> entities;         // parallel to BuildEntities(SystemInfo)
  std::uint64_t failed_calls_total = 0;        // backend's running count, for the self metric
  std::uint64_t profiling_failed_total = 0;    // likewise, GPM calls
  std::uint64_t profiling_rejected_total = 0;  // GPM values out of range, dropped
  // The GPU processes, parallel to SystemInfo::devices, when the read asked for them (the live
  // views); empty otherwise. The backend asks the driver at most once a second per device.
  std::vector<ProcessList> processes;
  // What an extension (the node agent) adds: exposition text appended to /metrics (its health
  // verdicts and policy counters), and why /health should fail ("" when it should not).
  std::string extension_exposition;
  std::string extension_health_failure;
  std::vector<HolderUsage> pod_usage;  // Kubernetes mode only
  // Slurm mode (hpc_jobs.h) or the HPC job mapping directory (hpc_job_mapping.h): per entity, the
  // rendered hpc_job label of each job using it.
  std::vector<std::vector<std::string>> job_labels;
  std::optional<JobMappingStatus> job_mapping;  // with --hpc-job-mapping-dir only
  std::vector<HolderUsage> job_usage;  // Slurm mode only: each job's use of each entity
  // The fault layer's (faults/): how reading the kernel log goes, and the NVSwitches' SXid counts;
  // absent and empty when the backend is not read through it.
  std::optional<faults::KernelLogStatus> kernel_log;
  std::vector<faults::SxidCount> sxids;

  // At least one device answered (the basis of gpulse_backend_up).
  bool AnyDeviceRead() const;
};

// Reads `fields` of every entity of `backend` (`entities` is BuildEntities(backend.info())).
// Skipped GPUs and compute instances get an empty reading (lost when the entity is lost). With
// `processes`, also lists every GPU's processes.
// REQUIRES: called from the backend's owner thread only.
std::shared_ptr<const Snapshot> ReadSnapshot(gpu::Backend& backend,
                                             const std::vector<Entity>& entities,
                                             std::span<const FieldIndex> fields,
                                             bool processes = false);

// Lists the processes of every GPU of `backend` into `snap` (ReadSnapshot's `processes`).
void ReadProcesses(gpu::Backend& backend, Snapshot& snap);

// Copies the fault layer's kernel-log status and SXid counts into `snap` (when `backend` has one).
void NoteFaults(const gpu::Backend& backend, Snapshot& snap);

}  // namespace gpulse::exporter
