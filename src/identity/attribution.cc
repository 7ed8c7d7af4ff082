#include "identity/attribution.h"

#include <algorithm>

namespace gpulse::identity {
namespace {

constexpr double kMaxSmPerGpu = 100.0;

const MigInstance* FindMig(const DeviceInfo& d, const GpuProcess& p) {
  if (!p.gpu_instance_id) return nullptr;
  for (const MigInstance& m : d.mig_instances) {
    if (m.gpu_instance_id == *p.gpu_instance_id &&
        m.compute_instance_id == p.compute_instance_id.value_or(0)) {
      return &m;
    }
  }
  return nullptr;
}

GroupGpu& GpuOf(Group& g, const PsRow& row) {
  for (GroupGpu& x : g.gpus) {
    if (x.index == row.gpu_index) return x;
  }
  GroupGpu x;
  x.index = row.gpu_index;
  x.uuid = row.gpu_uuid;
  x.used_memory_bytes = 0;
  g.gpus.push_back(x);
  return g.gpus.back();
}

void Add(Group& g, const PsRow& row) {
  if (std::find(g.pids.begin(), g.pids.end(), row.gpu.pid) == g.pids.end())
    g.pids.push_back(row.gpu.pid);
  GroupGpu& x = GpuOf(g, row);
  if (x.used_memory_bytes && row.gpu.used_memory_bytes) {
    *x.used_memory_bytes += *row.gpu.used_memory_bytes;
  } else {
    x.used_memory_bytes.reset();
  }
  if (row.gpu.sm_util) {
    x.sm_util = std::min(kMaxSmPerGpu, x.sm_util.value_or(0) + *row.gpu.sm_util);
  } else {
    ++x.sm_util_missing;
  }
}

void Total(Group& g) {
  std::sort(g.gpus.begin(), g.gpus.end(),
            [](const GroupGpu& a, const GroupGpu& b) { return a.index < b.index; });
  std::sort(g.pids.begin(), g.pids.end());
  g.used_memory_bytes = 0;
  for (const GroupGpu& x : g.gpus) {
    if (g.used_memory_bytes && x.used_memory_bytes) {
      *g.used_memory_bytes += *x.used_memory_bytes;
    } else {
      g.used_memory_bytes.reset();
    }
    if (x.sm_util) g.sm_util = g.sm_util.value_or(0) + *x.sm_util;
  }
}

std::vector<Group> Values(std::map<std::string, Group>& by_id) {
  std::vector<Group> out;
  for (auto& [id, g] : by_id) {
    Total(g);
    out.push_back(std::move(g));
  }
  return out;
}

DeviceProcesses Status(const DeviceInfo& d, const ProcessList& list) {
  DeviceProcesses s;
  s.index = d.index;
  s.uuid = d.uuid;
  s.error = list.error;
  s.source = list.source;
  s.utilization_source = list.utilization_source;
  s.listed = list.processes.has_value();
  return s;
}

}  // namespace

PsReport Attribute(const SystemInfo& info, std::span<const ProcessList> lists,
                   const std::map<unsigned, ProcessInfo>& procs) {
  PsReport report;
  std::map<std::string, Group> containers, pods, jobs;
  for (std::size_t pos = 0; pos < info.devices.size() && pos < lists.size(); ++pos) {
    const DeviceInfo& d = info.devices[pos];
    report.devices.push_back(Status(d, lists[pos]));
    if (!lists[pos].processes) continue;
    for (const GpuProcess& p : *lists[pos].processes) {
      PsRow row;
      row.gpu = p;
      row.gpu_index = d.index;
      row.gpu_uuid = d.uuid;
      if (const MigInstance* m = FindMig(d, p)) row.mig = *m;
      auto it = procs.find(p.pid);
      row.process = it != procs.end() ? it->second : ProcessInfo{p.pid, {}, {}, {}, {}, "not read"};
      report.rows.push_back(std::move(row));
    }
  }
  std::stable_sort(report.rows.begin(), report.rows.end(), [](const PsRow& a, const PsRow& b) {
    return a.gpu_index != b.gpu_index ? a.gpu_index < b.gpu_index : a.gpu.pid < b.gpu.pid;
  });
  for (const PsRow& row : report.rows) {
    if (!row.process.cgroup) continue;
    const CgroupPlacement& c = *row.process.cgroup;
    if (c.container) {
      Group& g = containers[c.container->id];
      g.id = c.container->id;
      g.container = c.container;
      g.pod = c.pod;
      Add(g, row);
    }
    if (c.pod) {
      Group& g = pods[c.pod->uid];
      g.id = c.pod->uid;
      g.pod = c.pod;
      if (c.container && std::find(g.containers.begin(), g.containers.end(), c.container->id) ==
                             g.containers.end()) {
        g.containers.push_back(c.container->id);
      }
      Add(g, row);
    }
    if (c.slurm) {
      Group& g = jobs[c.slurm->job_id];
      g.id = c.slurm->job_id;
      Add(g, row);
    }
  }
  report.containers = Values(containers);
  report.pods = Values(pods);
  report.jobs = Values(jobs);
  // Job ids are numbers: 10000 after 4242.
  std::stable_sort(report.jobs.begin(), report.jobs.end(), [](const Group& a, const Group& b) {
    return a.id.size() != b.id.size() ? a.id.size() < b.id.size() : a.id < b.id;
  });
  for (Group& g : report.pods) std::sort(g.containers.begin(), g.containers.end());
  return report;
}

namespace {

// What procfs says of one listed PID; without a procfs tree, an anonymous process saying why.
ProcessInfo ReadListed(const std::optional<sys::RootedFs>& proc, unsigned pid, ProcFacts facts) {
  if (proc) return ReadProcessInfo(*proc, pid, facts);
  ProcessInfo anonymous;
  anonymous.pid = pid;
  anonymous.error = "simulated PID: give a procfs tree (--procfs-root) to attribute it";
  return anonymous;
}

}  // namespace

std::map<unsigned, ProcessInfo> ReadListedProcesses(std::span<const ProcessList> lists,
                                                    const std::optional<sys::RootedFs>& proc,
                                                    ProcFacts facts) {
  std::map<unsigned, ProcessInfo> out;
  for (const ProcessList& list : lists) {
    if (!list.processes) continue;
    for (const GpuProcess& p : *list.processes) {
      if (!out.contains(p.pid)) out[p.pid] = ReadListed(proc, p.pid, facts);
    }
  }
  return out;
}

const std::map<unsigned, ProcessInfo>& ListedProcessCache::Update(
    std::span<const ProcessList> lists, std::int64_t now_ns) {
  std::map<unsigned, ProcessInfo> listed;
  last_reads_ = 0;
  for (const ProcessList& list : lists) {
    if (!list.processes) continue;
    for (const GpuProcess& p : *list.processes) {
      if (listed.contains(p.pid)) continue;
      auto kept = procs_.find(p.pid);
      auto at = read_at_ns_.find(p.pid);
      if (kept != procs_.end() && kept->second.error.empty() && at != read_at_ns_.end() &&
          now_ns - at->second < max_age_ns_) {
        listed.emplace(p.pid, std::move(kept->second));
        continue;
      }
      listed.emplace(p.pid, ReadListed(proc_, p.pid, facts_));
      read_at_ns_[p.pid] = now_ns;
      ++last_reads_;
    }
  }
  std::erase_if(read_at_ns_, [&](const auto& e) { return !listed.contains(e.first); });
  procs_ = std::move(listed);
  return procs_;
}

}  // namespace gpulse::identity
