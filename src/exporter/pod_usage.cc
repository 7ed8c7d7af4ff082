#include "exporter/pod_usage.h"

#include <algorithm>
#include <set>

#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

struct Use {
  std::size_t entity;
  const GpuProcess* process;
  std::string uid;  // "" when the process is in no pod
};

struct Sum {
  bool memory_known = true;
  std::uint64_t memory = 0;
  std::optional<double> sm;
};

void Add(Sum& s, const GpuProcess& p) {
  if (p.used_memory_bytes) {
    s.memory += *p.used_memory_bytes;
  } else {
    s.memory_known = false;
  }
  if (p.sm_util) s.sm = s.sm.value_or(0) + *p.sm_util;
}

std::string Labels(const identity::PodName& pod, const std::vector<identity::PodOwner>& owners) {
  std::set<std::string> containers;
  for (const identity::PodOwner& o : owners) {
    if (o.pod == pod.pod && o.ns == pod.ns) containers.insert(o.container);
  }
  std::vector<prom::Label> l = {{"pod", pod.pod}, {"namespace", pod.ns}};
  if (containers.size() == 1) l.push_back({"container", *containers.begin()});
  return prom::RenderLabels(l);
}

std::optional<double> PowerOf(const Snapshot& snap, std::size_t entity) {
  static const std::optional<FieldIndex> kPower = FindField("DCGM_FI_DEV_POWER_USAGE");
  if (!kPower || entity >= snap.entities.size()) return std::nullopt;
  const Sample& s = snap.entities[entity].sample;
  if (*kPower >= s.values.size()) return std::nullopt;
  return s.values[*kPower];
}

}  // namespace

std::vector<PodUsage> ComputePodUsage(const SystemInfo& info, const std::vector<Entity>& entities,
                                      const Snapshot& snap,
                                      const identity::PodAssignments& assignments,
                                      const std::map<unsigned, identity::ProcessInfo>& procs) {
  std::vector<Use> uses;
  identity::PodUidGpus uids;
  for (std::size_t d = 0; d < snap.processes.size() && d < info.devices.size(); ++d) {
    if (!snap.processes[d].processes) continue;
    for (const GpuProcess& p : *snap.processes[d].processes) {
      auto entity = identity::ProcessEntity(entities, info.devices[d].index, p);
      if (!entity) continue;
      std::string uid;
      if (auto it = procs.find(p.pid);
          it != procs.end() && it->second.cgroup && it->second.cgroup->pod) {
        uid = it->second.cgroup->pod->uid;
        uids[uid].insert(*entity);
      }
      uses.push_back({*entity, &p, uid});
    }
  }
  identity::PodNaming naming = identity::NamePods(assignments, uids);
  std::map<std::pair<std::size_t, std::string>, Sum> by_pod;  // (entity, uid)
  std::map<std::size_t, std::optional<double>> entity_sm;     // every process's SM on the entity
  for (const Use& u : uses) {
    auto& total = entity_sm[u.entity];
    if (u.process->sm_util) total = total.value_or(0) + *u.process->sm_util;
    if (!u.uid.empty() && naming.named.contains(u.uid)) Add(by_pod[{u.entity, u.uid}], *u.process);
  }
  std::vector<PodUsage> out;
  for (const auto& [key, sum] : by_pod) {
    const auto& [entity, uid] = key;
    PodUsage row;
    row.entity = entity;
    row.labels = Labels(naming.named.at(uid), entity < assignments.by_entity.size()
                                                  ? assignments.by_entity[entity]
                                                  : std::vector<identity::PodOwner>{});
    if (sum.memory_known) row.memory_bytes = sum.memory;
    if (sum.sm) row.sm_util = std::min(100.0, *sum.sm);
    std::optional<double> total = entity_sm[entity];
    std::optional<double> power = PowerOf(snap, entity);
    if (sum.sm && total && *total > 0 && power) row.power_watts = *power * (*sum.sm / *total);
    out.push_back(std::move(row));
  }
  return out;
}

void PodEnergyIntegrator::Integrate(std::vector<PodUsage>& rows, std::int64_t t_mono_ns) {
  const bool newer = !last_t_ns_ || t_mono_ns > *last_t_ns_;
  const double dt = newer && last_t_ns_ ? static_cast<double>(t_mono_ns - *last_t_ns_) / 1e9 : 0.0;
  std::map<std::pair<std::size_t, std::string>, State> next;
  for (PodUsage& row : rows) {
    auto key = std::pair{row.entity, row.labels};
    State s;
    if (auto it = state_.find(key); it != state_.end()) s = it->second;
    if (newer) {
      if (s.last_watts && row.power_watts) s.joules += (*s.last_watts + *row.power_watts) / 2 * dt;
      s.last_watts = row.power_watts;
    }
    row.energy_joules = s.joules;
    next.emplace(std::move(key), s);
  }
  state_ = std::move(next);
  if (newer) last_t_ns_ = t_mono_ns;
}

}  // namespace gpulse::exporter
