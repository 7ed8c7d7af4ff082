// Kubernetes mode: each pod's own use of the GPUs and MIG instances it holds, from NVML's
// per-process data (memory, SM utilization) joined with the processes' cgroups and the kubelet's
// answer, as `gpulse ps` computes it (identity/attribution.h): memory adds up; SM utilization adds
// up per entity, capped at 100; power is the entity's, apportioned by SM share
// (docs/adr/0022-per-pod-usage.md).
//
// Thread-safety: pure function.
#pragma once

#include <map>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/snapshot.h"
#include "identity/pod_resources.h"
#include "identity/process_info.h"

namespace gpulse::exporter {

// One row per (entity, pod) with processes. `snap.processes` parallel to info.devices; `procs` what
// procfs said of each PID; processes whose pod UID cannot be named are left out.
std::vector<PodUsage> ComputePodUsage(const SystemInfo& info, const std::vector<Entity>& entities,
                                      const Snapshot& snap,
                                      const identity::PodAssignments& assignments,
                                      const std::map<unsigned, identity::ProcessInfo>& procs);

}  // namespace gpulse::exporter
