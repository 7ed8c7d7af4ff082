// Slurm mode (--slurm-jobs): the `hpc_job` label of each GPU and MIG instance, the Slurm jobs whose
// processes use it, from the processes' cgroups (slurmstepd's job_N cgroups, identity/cgroup.h).
// dcgm-exporter's HPC job mapping gives the same label from files a Slurm prolog writes; gpulse
// reads the cgroups Slurm already has (docs/exporter.md, "Slurm jobs").
//
// Thread-safety: pure function.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/snapshot.h"
#include "identity/process_info.h"

namespace gpulse::exporter {

// Parallel to `entities`: the rendered `hpc_job="N"` of each job with a process on the entity, in
// job id order (empty: no job there). `snap.processes` is parallel to info.devices.
std::vector<std::vector<std::string>> JobLabels(
    const SystemInfo& info, const std::vector<Entity>& entities, const Snapshot& snap,
    const std::map<unsigned, identity::ProcessInfo>& procs);

}  // namespace gpulse::exporter
