#include "exporter/pod_usage.h"

#include <algorithm>
#include <set>

#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

// One GPU process on one entity.
struct Use {
  std::size_t entity;
  const GpuProcess* process;
};

std::vector<Use> Uses(const SystemInfo& info, const std::vector<Entity>& entities,
                      const Snapshot& snap) {
  std::vector<Use> uses;
  for (std::size_t d = 0; d < snap.processes.size() && d < info.devices.size(); ++d) {
    if (!snap.processes[d].processes) continue;
    for (const GpuProcess& p : *snap.processes[d].processes) {
      auto entity = identity::ProcessEntity(entities, info.devices[d].index, p);
      if (entity) uses.push_back({*entity, &p});
    }
  }
  return uses;
}

// What procfs said of the cgroup of `pid` (nullptr: nothing).
const identity::CgroupPlacement* CgroupOf(const std::map<unsigned, identity::ProcessInfo>& procs,
                                          unsigned pid) {
  auto it = procs.find(pid);
  return it != procs.end() && it->second.cgroup ? &*it->second.cgroup : nullptr;
}

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

std::optional<double> PowerOf(const Snapshot& snap, std::size_t entity) {
  static const std::optional<FieldIndex> kPower = FindField("DCGM_FI_DEV_POWER_USAGE");
  if (!kPower || entity >= snap.entities.size()) return std::nullopt;
  const Sample& s = snap.entities[entity].sample;
  if (*kPower >= s.values.size()) return std::nullopt;
  return s.values[*kPower];
}

// A row per (entity, holder): `holders[i]` is the rendered labels of uses[i]'s holder, "" when it
// has none. Every use counts in its entity's SM total, held or not.
std::vector<HolderUsage> Apportion(const Snapshot& snap, const std::vector<Use>& uses,
                                   const std::vector<std::string>& holders) {
  std::map<std::pair<std::size_t, std::string>, Sum> by_holder;
  std::map<std::size_t, std::optional<double>> entity_sm;
  for (std::size_t i = 0; i < uses.size(); ++i) {
    auto& total = entity_sm[uses[i].entity];
    if (uses[i].process->sm_util) total = total.value_or(0) + *uses[i].process->sm_util;
    if (!holders[i].empty()) Add(by_holder[{uses[i].entity, holders[i]}], *uses[i].process);
  }
  std::vector<HolderUsage> out;
  for (const auto& [key, sum] : by_holder) {
    HolderUsage row;
    row.entity = key.first;
    row.labels = key.second;
    if (sum.memory_known) row.memory_bytes = sum.memory;
    if (sum.sm) row.sm_util = std::min(100.0, *sum.sm);
    std::optional<double> total = entity_sm[key.first];
    if (sum.sm && total && *total > 0) row.sm_share = *sum.sm / *total;
    out.push_back(std::move(row));
  }
  ApplyPower(out, snap);
  return out;
}

// The containers of `pod` holding entity `e`, by name.
std::set<std::string> ContainersOn(const identity::PodAssignments& assignments, std::size_t e,
                                   const identity::PodName& pod) {
  std::set<std::string> out;
  if (e >= assignments.by_entity.size()) return out;
  for (const identity::PodOwner& o : assignments.by_entity[e]) {
    if (o.pod == pod.pod && o.ns == pod.ns) out.insert(o.container);
  }
  return out;
}

// Names the container IDs (from cgroups) of one pod by the same elimination as pod UIDs: the pod's
// containers stand for the pods, its container IDs for the UIDs.
std::map<std::string, std::string> NameContainers(const identity::PodAssignments& assignments,
                                                  const identity::PodName& pod,
                                                  const identity::PodUidGpus& ids) {
  identity::PodAssignments mine;
  mine.by_entity.resize(assignments.by_entity.size());
  for (std::size_t e = 0; e < assignments.by_entity.size(); ++e) {
    for (const std::string& c : ContainersOn(assignments, e, pod)) {
      mine.by_entity[e].push_back({.pod = c, .ns = "", .container = c, .vgpu = ""});
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [id, name] : identity::NamePods(mine, ids).named) out[id] = name.pod;
  return out;
}

}  // namespace

Holders PodHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                   const Snapshot& snap, const identity::PodAssignments& assignments,
                   const std::map<unsigned, identity::ProcessInfo>& procs) {
  std::vector<Use> uses = Uses(info, entities, snap);
  auto uid_of = [&](const Use& u) {
    const identity::CgroupPlacement* c = CgroupOf(procs, u.process->pid);
    return c && c->pod ? c->pod->uid : "";
  };
  identity::PodUidGpus uids;
  std::map<std::string, identity::PodUidGpus> container_ids;  // pod UID → container ID → entities
  for (const Use& u : uses) {
    const std::string uid = uid_of(u);
    if (uid.empty()) continue;
    uids[uid].insert(u.entity);
    const identity::CgroupPlacement* c = CgroupOf(procs, u.process->pid);
    if (c->container) container_ids[uid][c->container->id].insert(u.entity);
  }
  identity::PodNaming naming = identity::NamePods(assignments, uids);
  std::map<std::string, std::map<std::string, std::string>> containers;  // pod UID → ID → name
  for (const auto& [uid, pod] : naming.named) {
    containers[uid] = NameContainers(assignments, pod, container_ids[uid]);
  }
  Holders holders;
  for (const Use& u : uses) {
    const std::string uid = uid_of(u);
    auto named = naming.named.find(uid);
    if (uid.empty() || named == naming.named.end()) continue;
    const identity::PodName& pod = named->second;
    std::vector<prom::Label> l = {{"pod", pod.pod}, {"namespace", pod.ns}};
    std::set<std::string> on = ContainersOn(assignments, u.entity, pod);
    const std::map<std::string, std::string>& ids = containers[uid];
    const identity::CgroupPlacement* c = CgroupOf(procs, u.process->pid);
    auto id = c->container ? ids.find(c->container->id) : ids.end();
    if (id != ids.end()) {
      l.push_back({"container", id->second});
    } else if (on.size() == 1) {
      l.push_back({"container", *on.begin()});
    }
    holders[{u.entity, u.process->pid}] = prom::RenderLabels(l);
  }
  return holders;
}

Holders JobHolders(const SystemInfo& info, const std::vector<Entity>& entities,
                   const Snapshot& snap, const std::map<unsigned, identity::ProcessInfo>& procs) {
  Holders holders;
  for (const Use& u : Uses(info, entities, snap)) {
    const identity::CgroupPlacement* c = CgroupOf(procs, u.process->pid);
    if (c == nullptr || !c->slurm) continue;
    prom::Label l{"hpc_job", c->slurm->job_id};
    holders[{u.entity, u.process->pid}] = prom::RenderLabels({&l, 1});
  }
  return holders;
}

std::vector<HolderUsage> UsageOf(const SystemInfo& info, const std::vector<Entity>& entities,
                                 const Snapshot& snap, const Holders& holders) {
  std::vector<Use> uses = Uses(info, entities, snap);
  std::vector<std::string> labels;
  labels.reserve(uses.size());
  for (const Use& u : uses) {
    auto it = holders.find({u.entity, u.process->pid});
    labels.push_back(it != holders.end() ? it->second : std::string());
  }
  return Apportion(snap, uses, labels);
}

std::vector<HolderUsage> ComputePodUsage(const SystemInfo& info,
                                         const std::vector<Entity>& entities, const Snapshot& snap,
                                         const identity::PodAssignments& assignments,
                                         const std::map<unsigned, identity::ProcessInfo>& procs) {
  return UsageOf(info, entities, snap, PodHolders(info, entities, snap, assignments, procs));
}

std::vector<HolderUsage> ComputeJobUsage(const SystemInfo& info,
                                         const std::vector<Entity>& entities, const Snapshot& snap,
                                         const std::map<unsigned, identity::ProcessInfo>& procs) {
  return UsageOf(info, entities, snap, JobHolders(info, entities, snap, procs));
}

void ApplyPower(std::vector<HolderUsage>& rows, const Snapshot& snap) {
  for (HolderUsage& row : rows) {
    std::optional<double> power = PowerOf(snap, row.entity);
    row.power_watts.reset();
    if (row.sm_share && power) row.power_watts = *power * *row.sm_share;
  }
}

void UsageEnergyIntegrator::Integrate(std::vector<HolderUsage>& rows, std::int64_t t_mono_ns) {
  const bool newer = !last_t_ns_ || t_mono_ns > *last_t_ns_;
  const double dt = newer && last_t_ns_ ? static_cast<double>(t_mono_ns - *last_t_ns_) / 1e9 : 0.0;
  std::map<std::pair<std::size_t, std::string>, State> next;
  for (HolderUsage& row : rows) {
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
