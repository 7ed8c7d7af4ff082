#include "exporter/hpc_jobs.h"

#include <set>

#include "identity/pod_resources.h"
#include "prom/writer.h"

namespace gpulse::exporter {

std::vector<std::vector<std::string>> JobLabels(
    const SystemInfo& info, const std::vector<Entity>& entities, const Snapshot& snap,
    const std::map<unsigned, identity::ProcessInfo>& procs) {
  std::vector<std::set<std::string>> jobs(entities.size());
  for (std::size_t d = 0; d < snap.processes.size() && d < info.devices.size(); ++d) {
    if (!snap.processes[d].processes) continue;
    for (const GpuProcess& p : *snap.processes[d].processes) {
      auto it = procs.find(p.pid);
      if (it == procs.end() || !it->second.cgroup || !it->second.cgroup->slurm) continue;
      if (auto e = identity::ProcessEntity(entities, info.devices[d].index, p)) {
        jobs[*e].insert(it->second.cgroup->slurm->job_id);
      }
    }
  }
  std::vector<std::vector<std::string>> out(entities.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    for (const std::string& job : jobs[i]) {
      prom::Label l{"hpc_job", job};
      out[i].push_back(prom::RenderLabels({&l, 1}));
    }
  }
  return out;
}

}  // namespace gpulse::exporter
