#include "exporter/attribution_cache.h"

#include <algorithm>

#include "exporter/hpc_jobs.h"

namespace gpulse::exporter {

std::optional<std::int64_t> NextListingBetweenReads(std::int64_t now_ns, std::int64_t last_read_ns,
                                                    std::int64_t listed_ns) {
  constexpr std::int64_t kDue = gpu::kProcessListMinIntervalNs;
  if (listed_ns == 0 || now_ns - last_read_ns > kDue) return std::nullopt;
  return listed_ns + kDue;
}

AttributionCache::AttributionCache(std::optional<sys::RootedFs> proc, bool jobs)
    // Only the cgroups: holders are pods and jobs, never users, so no name lookup (NSS) runs on
    // the reading thread. The facts of a PID kept while it stays listed are read again once
    // kRecheckNs old.
    : jobs_(jobs), procs_(std::move(proc), identity::ProcFacts::kCgroupOnly, kRecheckNs) {}

std::vector<AttributionCache::Placement> AttributionCache::PlacementsOf(const Snapshot& snap) {
  std::vector<Placement> out;
  for (std::size_t d = 0; d < snap.processes.size(); ++d) {
    if (!snap.processes[d].processes) continue;
    for (const GpuProcess& p : *snap.processes[d].processes) {
      out.emplace_back(d, p.pid, p.gpu_instance_id, p.compute_instance_id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void AttributionCache::FindHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                                   const Snapshot& snap, const k8s::PodState* state,
                                   std::int64_t now_ns) {
  const std::map<unsigned, identity::ProcessInfo>& procs = procs_.Update(snap.processes, now_ns);
  procfs_reads_ += procs_.last_reads();
  pod_holders_.clear();
  if (state != nullptr && state->ok) {
    pod_holders_ = PodHolders(info, entities, snap, state->assignments, procs);
  }
  job_holders_.clear();
  job_labels_.clear();
  if (jobs_) {
    job_holders_ = JobHolders(info, entities, snap, procs);
    job_labels_ = JobLabels(info, entities, snap, procs);
  }
  const bool missing = std::any_of(procs.begin(), procs.end(),
                                   [](const auto& p) { return !p.second.error.empty(); });
  recheck_at_ns_ = now_ns + (missing ? kRetryMissingNs : kRecheckNs);
  ++holder_passes_;
}

const Attribution& AttributionCache::Update(const SystemInfo& info,
                                            const std::vector<Entity>& entities,
                                            const Snapshot& snap,
                                            std::shared_ptr<const k8s::PodState> state,
                                            std::int64_t now_ns, std::int64_t early_ns) {
  std::vector<Placement> placements = PlacementsOf(snap);
  // The kubelet is asked every few seconds; an answer that assigns the same pods as the last
  // changes no holder.
  const bool same_pods = state == state_ || (state != nullptr && state_ != nullptr &&
                                             state->ok == state_->ok &&
                                             state->assignments == state_->assignments);
  const bool holders = holder_passes_ == 0 || placements != placements_ || !same_pods ||
                       now_ns + early_ns >= recheck_at_ns_;
  if (holders) {
    FindHolders(info, entities, snap, state.get(), now_ns);
    placements_ = std::move(placements);
  }
  state_ = std::move(state);
  std::vector<std::int64_t> listed;
  for (const ProcessList& l : snap.processes) listed.push_back(l.t_mono_ns);
  if (holders || listed != listed_) {
    attribution_.pods = state_ != nullptr && state_->ok
                            ? UsageOf(info, entities, snap, pod_holders_)
                            : std::vector<HolderUsage>{};
    attribution_.jobs = jobs_ ? UsageOf(info, entities, snap, job_holders_)
                              : std::vector<HolderUsage>{};
    attribution_.job_labels = job_labels_;
    listed_ = std::move(listed);
  }
  return attribution_;
}

}  // namespace gpulse::exporter
