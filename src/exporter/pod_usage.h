// Kubernetes and Slurm modes: each pod's (container's) or Slurm job's own use of the GPUs and MIG
// instances it holds, from NVML's per-process data joined with the processes' cgroups (and, for
// pods, the kubelet's answer), as `gpulse ps` computes it (identity/attribution.h): memory adds up;
// SM utilization adds up per entity, capped at 100; power is the entity's, apportioned by SM share
// (docs/adr/0022-per-pod-usage.md).
//
// Thread-safety: pure functions, except UsageEnergyIntegrator (one caller at a time).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/entity.h"
#include "exporter/snapshot.h"
#include "identity/pod_resources.h"
#include "identity/process_info.h"

namespace gpulse::exporter {

// Who holds each listed process: (entity, PID) → the holder's rendered labels; a process it does
// not name is held by no one. It depends only on where each PID is listed, what procfs said of its
// cgroup and (for pods) the kubelet's answer, never on a read's numbers, so a reader that lists the
// same PIDs again keeps it and only apportions the new numbers (UsageOf; AttributionCache).
using Holders = std::map<std::pair<std::size_t, unsigned>, std::string>;

// The pods' (containers') holders: see ComputePodUsage.
Holders PodHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                   const Snapshot& snap, const identity::PodAssignments& assignments,
                   const std::map<unsigned, identity::ProcessInfo>& procs);

// The Slurm jobs' holders: see ComputeJobUsage.
Holders JobHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                   const Snapshot& snap, const std::map<unsigned, identity::ProcessInfo>& procs);

// One row per (entity, holder) of `snap`'s processes as `holders` names them, their numbers and
// power from `snap`. Processes held by no one are left out of the rows but still count in their
// entity's SM total.
std::vector<HolderUsage> UsageOf(const SystemInfo& info, const std::vector<Entity>& entities,
                                 const Snapshot& snap, const Holders& holders);

// UsageOf by PodHolders: one row per (entity, container) with processes; a row per (entity, pod), without a container
// label, for the processes whose container cannot be told apart from the pod's other containers on
// that entity (several containers of one pod holding it, named by elimination like pods:
// identity::NamePods). `snap.processes` parallel to info.devices; `procs` what procfs said of each
// PID; processes whose pod UID cannot be named are left out.
std::vector<HolderUsage> ComputePodUsage(const SystemInfo& info,
                                         const std::vector<Entity>& entities, const Snapshot& snap,
                                         const identity::PodAssignments& assignments,
                                         const std::map<unsigned, identity::ProcessInfo>& procs);

// UsageOf by JobHolders: one row per (entity, Slurm job) with processes, labelled hpc_job; processes in no job's cgroup
// are left out (their SM share still counts in the entity's total).
std::vector<HolderUsage> ComputeJobUsage(const SystemInfo& info,
                                         const std::vector<Entity>& entities, const Snapshot& snap,
                                         const std::map<unsigned, identity::ProcessInfo>& procs);

// Sets each row's power_watts from `snap`: the entity's power × the row's sm_share (absent when
// either is). The rows' shares change only with the process lists; the power with every read.
void ApplyPower(std::vector<HolderUsage>& rows, const Snapshot& snap);

// Integrates each (entity, holder) row's power estimate over time into an energy counter, by the
// trapezoid rule between consecutive reads (docs/adr/0022-per-pod-usage.md). A row whose power is
// unknown at either end adds nothing for that interval. A row absent from a read is forgotten: if
// the holder comes back its counter starts again at 0, which Prometheus's rate() reads as a reset.
//
// Thread-safety: one caller at a time (the exporter's reader).
class UsageEnergyIntegrator {
 public:
  // Fills rows[i].energy_joules for a read taken at `t_mono_ns`. A read not newer than the last
  // one integrated (the same snapshot served again) adds nothing.
  void Integrate(std::vector<HolderUsage>& rows, std::int64_t t_mono_ns);

 private:
  struct State {
    double joules = 0;
    std::optional<double> last_watts;
  };
  std::map<std::pair<std::size_t, std::string>, State> state_;  // (entity, labels)
  std::optional<std::int64_t> last_t_ns_;
};

// Who uses what in one read, before its power is apportioned (ApplyPower).
struct Attribution {
  std::vector<HolderUsage> pods;  // Kubernetes mode
  std::vector<HolderUsage> jobs;  // Slurm mode
  std::vector<std::vector<std::string>> job_labels;  // Slurm mode: JobLabels
};

// The exporter's counters: one integrator per kind of holder.
struct Integrators {
  UsageEnergyIntegrator pods;
  UsageEnergyIntegrator jobs;
};

}  // namespace gpulse::exporter
