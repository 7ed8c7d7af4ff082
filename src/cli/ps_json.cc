#include "cli/ps_json.h"

#include "core/entity.h"

namespace gpulse::cli {
namespace {

using Json = nlohmann::json;

template <typename T>
Json OrNull(const std::optional<T>& v) {
  return v ? Json(*v) : Json(nullptr);
}

std::string TypeOf(const GpuProcess& p) {
  if (p.compute && p.graphics) return "C+G";
  return p.graphics ? "G" : "C";
}

Json MigJson(const identity::PsRow& r) {
  if (!r.gpu.gpu_instance_id) return nullptr;
  return {{"gpu_instance_id", *r.gpu.gpu_instance_id},
          {"compute_instance_id", OrNull(r.gpu.compute_instance_id)},
          {"uuid", r.mig ? Json(r.mig->uuid) : Json(nullptr)},
          {"profile", r.mig ? Json(r.mig->profile) : Json(nullptr)}};
}

Json ContainerJson(const std::optional<identity::ContainerRef>& c) {
  if (!c) return nullptr;
  return {{"id", c->id}, {"runtime", std::string(identity::RuntimeName(c->runtime))}};
}

// The pod's name and namespace from the kubelet, or null and why not.
void AddPodName(Json& j, const std::string& uid, const PsPodNames& names) {
  if (auto it = names.naming.named.find(uid); it != names.naming.named.end()) {
    j["name"] = it->second.pod;
    j["namespace"] = it->second.ns;
    j["name_error"] = nullptr;
    return;
  }
  j["name"] = nullptr;
  j["namespace"] = nullptr;
  auto why = names.naming.reason.find(uid);
  j["name_error"] = why != names.naming.reason.end() ? why->second
                    : names.unavailable.empty()      ? "not asked"
                                                     : names.unavailable;
}

Json PodJson(const std::optional<identity::PodRef>& p, const PsPodNames& names) {
  if (!p) return nullptr;
  Json j = {{"uid", p->uid}, {"qos_class", std::string(identity::QosName(p->qos))}};
  AddPodName(j, p->uid, names);
  return j;
}

Json SlurmJson(const std::optional<identity::SlurmJobRef>& j) {
  if (!j) return nullptr;
  return {{"job_id", j->job_id}, {"step", OrNull(j->step)}, {"uid", OrNull(j->uid)}};
}

Json RowJson(const identity::PsRow& r, const PsPodNames& names) {
  const auto& c = r.process.cgroup;
  return {{"pid", r.gpu.pid},
          {"name", OrNull(r.process.name)},
          {"uid", OrNull(r.process.uid)},
          {"user", OrNull(r.process.user)},
          {"gpu", {{"index", r.gpu_index}, {"uuid", r.gpu_uuid}}},
          {"type", TypeOf(r.gpu)},
          {"mig", MigJson(r)},
          {"used_memory_bytes", OrNull(r.gpu.used_memory_bytes)},
          {"sm_util", OrNull(r.gpu.sm_util)},
          {"mem_util", OrNull(r.gpu.mem_util)},
          {"enc_util", OrNull(r.gpu.enc_util)},
          {"dec_util", OrNull(r.gpu.dec_util)},
          {"container", c ? ContainerJson(c->container) : Json(nullptr)},
          {"pod", c ? PodJson(c->pod, names) : Json(nullptr)},
          {"cgroup", c ? Json{{"version", c->version}, {"path", c->path}} : Json(nullptr)},
          {"slurm_job", c ? SlurmJson(c->slurm) : Json(nullptr)},
          {"procfs_error", r.process.error.empty() ? Json(nullptr) : Json(r.process.error)}};
}

Json GroupJson(const identity::Group& g, bool pod, const PsPodNames& names) {
  Json gpus = Json::array();
  for (const auto& x : g.gpus) {
    gpus.push_back({{"index", x.index},
                    {"uuid", x.uuid},
                    {"used_memory_bytes", OrNull(x.used_memory_bytes)},
                    {"sm_util", OrNull(x.sm_util)},
                    {"processes_without_sm_util", x.sm_util_missing}});
  }
  Json j = {{"pids", g.pids},
            {"gpus", gpus},
            {"used_memory_bytes", OrNull(g.used_memory_bytes)},
            {"sm_util", OrNull(g.sm_util)}};
  if (pod) {
    j["uid"] = g.id;
    j["qos_class"] = g.pod ? Json(std::string(identity::QosName(g.pod->qos))) : Json(nullptr);
    j["containers"] = g.containers;
    AddPodName(j, g.id, names);
  } else {
    j["id"] = g.id;
    j["runtime"] = g.container ? Json(std::string(identity::RuntimeName(g.container->runtime)))
                               : Json(nullptr);
    j["pod_uid"] = g.pod ? Json(g.pod->uid) : Json(nullptr);
  }
  return j;
}

}  // namespace

Json PsDocument(const SystemInfo& info, const identity::PsReport& report,
                const std::optional<std::string>& procfs_root, const PsPodNames& names) {
  Json j;
  j["schema_version"] = 1;
  j["simulated"] = info.simulated;
  j["scenario"] = info.simulated ? Json(info.scenario) : Json(nullptr);
  j["procfs_root"] = OrNull(procfs_root);
  j["devices"] = Json::array();
  for (const auto& d : report.devices) {
    j["devices"].push_back(
        {{"index", d.index},
         {"uuid", d.uuid},
         {"listed", d.listed},
         {"source", d.source.empty() ? Json(nullptr) : Json(d.source)},
         {"utilization_source",
          d.utilization_source.empty() ? Json(nullptr) : Json(d.utilization_source)},
         {"error", d.error.empty() ? Json(nullptr) : Json(d.error)}});
  }
  // GPUs the driver counts that cannot be listed at all: skipped, or lost before start.
  j["unreadable_gpus"] = Json::array();
  for (const Entity& e : BuildEntities(info)) {
    if (e.kind != EntityKind::kGpu || e.state == EntityState::kPresent) continue;
    j["unreadable_gpus"].push_back({{"index", e.gpu},
                                    {"state", EntityStateName(e.state)},
                                    {"reason", e.reason},
                                    {"uuid", e.uuid.empty() ? Json(nullptr) : Json(e.uuid)},
                                    {"pci_bus_id", e.pci_bus_id.empty() ? Json(nullptr) : Json(e.pci_bus_id)}});
  }
  j["processes"] = Json::array();
  for (const auto& r : report.rows) j["processes"].push_back(RowJson(r, names));
  j["containers"] = Json::array();
  for (const auto& g : report.containers) j["containers"].push_back(GroupJson(g, false, names));
  j["pods"] = Json::array();
  for (const auto& g : report.pods) j["pods"].push_back(GroupJson(g, true, names));
  j["slurm_jobs"] = Json::array();
  for (const auto& g : report.jobs) {
    Json x = GroupJson(g, false, names);
    x.erase("runtime");
    x.erase("pod_uid");
    x["job_id"] = x["id"];
    x.erase("id");
    j["slurm_jobs"].push_back(std::move(x));
  }
  return j;
}

}  // namespace gpulse::cli
