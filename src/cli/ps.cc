// `gpulse ps [--format table|csv|json] [-l]`: the processes using GPUs, like `nvidia-smi pmon` joined with procfs:
// PID, name, user, GPU, MIG instance, GPU memory, SM utilization, container and Kubernetes pod,
// then per-pod and per-container aggregates (identity/attribution.h). Process lists are read once;
// the backend rate-limits them (gpu::kProcessListMinIntervalNs).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <set>

#include "cli/gpu_options.h"
#include "cli/output_format.h"
#include "cli/procfs_options.h"
#include "cli/ps_json.h"
#include "cli/subcommand.h"
#include "core/entity.h"
#include "gpu/registry.h"
#include "identity/attribution.h"
#include "identity/pod_resources.h"
#include "k8s/pod_resources_client.h"

namespace gpulse::cli {
namespace {

using identity::Group;
using identity::PsReport;
using identity::PsRow;

struct PsOptions {
  gpu::BackendOptions gpu;
  OutputFormat out;
  bool long_format = false;
  std::string procfs_root;
  std::string kubelet_socket = k8s::kDefaultKubeletSocket;
  std::string gpu_id_type = "uid";
};

// The pods' names from the kubelet, joined to the cgroups' pod UIDs through the GPUs their
// processes use (identity::NamePods); asked only when some process is in a pod.
PsPodNames NamePods(const PsOptions& o, const SystemInfo& info, const PsReport& report,
                    identity::GpuIdType id_type) {
  PsPodNames out;
  std::vector<Entity> entities = BuildEntities(info);
  identity::PodUidGpus uids;
  for (const PsRow& r : report.rows) {
    const auto& c = r.process.cgroup;
    if (!c || !c->pod) continue;
    if (auto e = identity::ProcessEntity(entities, r.gpu_index, r.gpu))
      uids[c->pod->uid].insert(*e);
  }
  if (uids.empty()) {
    out.unavailable = "no GPU process is in a pod";
    return out;
  }
  k8s::ListOptions list;
  list.socket_path = o.kubelet_socket;
  list.timeout = std::chrono::seconds(5);
  list.keep_resource = [](std::string_view r) { return identity::CountedResource(r); };
  auto pods = k8s::ListPodResources(list);
  if (!pods) {
    out.unavailable = pods.error().message;
    return out;
  }
  out.naming = identity::NamePods(identity::AssignPods(entities, *pods, id_type), uids);
  return out;
}

// "namespace/name" when the kubelet named the pod, else its UID.
std::string PodColumn(const std::string& uid, const PsPodNames& names) {
  auto it = names.naming.named.find(uid);
  return it == names.naming.named.end() ? uid : it->second.ns + "/" + it->second.pod;
}

std::string Mib(const std::optional<std::uint64_t>& bytes) {
  return bytes ? fmt::format("{}MiB", *bytes >> 20) : "N/A";
}

std::string Pct(const std::optional<double>& v) { return v ? fmt::format("{:.0f}", *v) : "N/A"; }

std::string Or(const std::optional<std::string>& v, std::string_view fallback = "-") {
  return v ? *v : std::string(fallback);
}

std::string Short(const std::string& id, bool long_format, std::size_t n) {
  return long_format ? id : id.substr(0, n);
}

std::string UserOf(const identity::ProcessInfo& p) {
  if (p.user) return *p.user;
  return p.uid ? std::to_string(*p.uid) : "-";
}

std::string MigOf(const PsRow& r) {
  if (!r.gpu.gpu_instance_id) return "-";
  std::string ids =
      fmt::format("{}/{}", *r.gpu.gpu_instance_id,
                  r.gpu.compute_instance_id ? std::to_string(*r.gpu.compute_instance_id) : "?");
  return r.mig && !r.mig->profile.empty() ? r.mig->profile + " " + ids : ids;
}

// The POD column: the pod ("namespace/name" or UID), else the Slurm job ("slurm job N.STEP").
std::string PodOrJob(const std::optional<identity::CgroupPlacement>& c, const PsPodNames& names) {
  if (c && c->pod) return PodColumn(c->pod->uid, names);
  if (c && c->slurm) {
    return "slurm job " + c->slurm->job_id + (c->slurm->step ? "." + *c->slurm->step : "");
  }
  return "-";
}

void PrintRow(const PsRow& r, bool l, const PsPodNames& names);

// Every GPU in GPU order, as nvidia-smi pmon lists them: its processes, else one row saying it has
// none or why it is not read (issue 40: a skipped GPU was named on stderr only).
void PrintRows(const SystemInfo& info, const PsReport& report, bool l, const PsPodNames& names) {
  std::string head = fmt::format("{:>3}  {:<{}}  {:>8}  {:<10}  {:<14}  {:>10}  {:>4}", "GPU",
                                 "UUID", l ? 40 : 12, "PID", "USER", "MIG", "GPU MEM", "SM%");
  if (l)
    head += fmt::format("  {:>4}  {:>4}  {:>4}  {:<4}  {:<10}  {:<10}", "MEM%", "ENC%", "DEC%",
                        "TYPE", "RUNTIME", "QOS");
  head += fmt::format("  {:<{}}  {:<36}  {}", "CONTAINER", l ? 64 : 12, "POD / SLURM JOB", "NAME");
  fmt::print("{}\n", head);
  std::vector<bool> printed(report.rows.size(), false);
  for (const Entity& e : BuildEntities(info)) {
    if (e.kind != EntityKind::kGpu) continue;
    bool any = false;
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (report.rows[i].gpu_index != e.gpu) continue;
      PrintRow(report.rows[i], l, names);
      printed[i] = any = true;
    }
    if (any) continue;
    std::string line = fmt::format("{:>3}  {:<{}}  {:>8}  {:<10}  {:<14}  {:>10}  {:>4}", e.gpu,
                                   e.uuid.empty() ? "-" : Short(e.uuid, l, 12), l ? 40 : 12, "-",
                                   "-", "-", "-", "-");
    if (l) line += fmt::format("  {:>4}  {:>4}  {:>4}  {:<4}  {:<10}  {:<10}", "-", "-", "-", "-", "-", "-");
    const std::string why = e.state == EntityState::kPresent
                                ? "(no process)"
                                : fmt::format("({}: {})", EntityStateName(e.state), e.reason);
    line += fmt::format("  {:<{}}  {:<36}  {}", "-", l ? 64 : 12, "-", why);
    fmt::print("{}\n", line);
  }
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (!printed[i]) PrintRow(report.rows[i], l, names);
  }
}

void PrintRow(const PsRow& r, bool l, const PsPodNames& names) {
  {
    const auto& c = r.process.cgroup;
    std::string line =
        fmt::format("{:>3}  {:<{}}  {:>8}  {:<10}  {:<14}  {:>10}  {:>4}", r.gpu_index,
                    Short(r.gpu_uuid, l, 12), l ? 40 : 12, r.gpu.pid, UserOf(r.process), MigOf(r),
                    Mib(r.gpu.used_memory_bytes), Pct(r.gpu.sm_util));
    if (l) {
      std::string type = r.gpu.compute && r.gpu.graphics ? "C+G" : (r.gpu.graphics ? "G" : "C");
      line += fmt::format("  {:>4}  {:>4}  {:>4}  {:<4}  {:<10}  {:<10}", Pct(r.gpu.mem_util),
                          Pct(r.gpu.enc_util), Pct(r.gpu.dec_util), type,
                          c && c->container ? identity::RuntimeName(c->container->runtime) : "-",
                          c && c->pod ? identity::QosName(c->pod->qos) : "-");
    }
    std::string container = c && c->container ? Short(c->container->id, l, 12) : "-";
    line += fmt::format("  {:<{}}  {:<36}  {}", container, l ? 64 : 12, PodOrJob(c, names),
                        Or(r.process.name));
    fmt::print("{}\n", line);
  }
}

std::string GpuList(const Group& g) {
  std::string out;
  for (const auto& x : g.gpus) out += (out.empty() ? "" : ",") + std::to_string(x.index);
  return out;
}

void PrintGroups(const PsReport& report, bool l, const PsPodNames& names) {
  if (!report.pods.empty()) {
    fmt::print("\nPer pod (GPU memory summed; SM% summed per GPU, capped at 100 per GPU):\n");
    fmt::print("{:<36}  {:<10}  {:>10}  {:<12}  {:>10}  {:>4}\n", "POD", "QOS", "CONTAINERS",
               "GPUS", "GPU MEM", "SM%");
    for (const Group& g : report.pods) {
      fmt::print("{:<36}  {:<10}  {:>10}  {:<12}  {:>10}  {:>4}\n", PodColumn(g.id, names),
                 g.pod ? identity::QosName(g.pod->qos) : "-", g.containers.size(), GpuList(g),
                 Mib(g.used_memory_bytes), Pct(g.sm_util));
    }
  }
  if (!report.jobs.empty()) {
    fmt::print("\nPer Slurm job (its steps together; sums as per pod):\n");
    fmt::print("{:<16}  {:>9}  {:<12}  {:>10}  {:>4}\n", "JOB", "PROCESSES", "GPUS", "GPU MEM", "SM%");
    for (const Group& g : report.jobs) {
      fmt::print("{:<16}  {:>9}  {:<12}  {:>10}  {:>4}\n", g.id, g.pids.size(), GpuList(g),
                 Mib(g.used_memory_bytes), Pct(g.sm_util));
    }
  }
  if (!report.containers.empty()) {
    fmt::print("\nPer container:\n");
    fmt::print("{:<{}}  {:<10}  {:<36}  {:<12}  {:>10}  {:>4}\n", "CONTAINER", l ? 64 : 12,
               "RUNTIME", "POD", "GPUS", "GPU MEM", "SM%");
    for (const Group& g : report.containers) {
      fmt::print("{:<{}}  {:<10}  {:<36}  {:<12}  {:>10}  {:>4}\n", Short(g.id, l, 12), l ? 64 : 12,
                 g.container ? identity::RuntimeName(g.container->runtime) : "-",
                 g.pod ? PodColumn(g.pod->uid, names) : "-", GpuList(g), Mib(g.used_memory_bytes),
                 Pct(g.sm_util));
    }
  }
}

// The CSV's rows, as the table's: every process, a row for each GPU without one, and the GPUs
// that cannot be read, with their state and reason (no GPU vanishes from an output).
nlohmann::json CsvRows(const nlohmann::json& doc) {
  nlohmann::json rows = nlohmann::json::array();
  std::set<unsigned> with_process;
  for (nlohmann::json p : doc["processes"]) {
    with_process.insert(p["gpu"].value("index", 0u));
    p["gpu_state"] = "present";
    rows.push_back(std::move(p));
  }
  for (const nlohmann::json& d : doc["devices"]) {
    if (with_process.count(d.value("index", 0u)) != 0) continue;
    rows.push_back({{"gpu", {{"index", d["index"]}, {"uuid", d["uuid"]}}},
                    {"gpu_state", "present"},
                    {"reason", d["error"].is_string() ? d["error"] : nlohmann::json("no process")}});
  }
  for (const nlohmann::json& d : doc["unreadable_gpus"]) {
    rows.push_back({{"gpu", {{"index", d["index"]}, {"uuid", d["uuid"]}}},
                    {"gpu_state", d["state"]},
                    {"reason", d["reason"]}});
  }
  return rows;
}

int Run(const PsOptions& o) {
  auto backend = gpu::OpenBackend(WithProcfs(o.gpu, o.procfs_root));
  if (!backend) {
    fmt::print(stderr, "gpulse ps: {}\n", backend.error().message);
    return backend.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  gpu::Backend& b = **backend;
  const SystemInfo& info = b.info();
  auto proc = ChooseProcfs(o.procfs_root, info.simulated);
  if (!proc) {
    fmt::print(stderr, "gpulse ps: {}\n", proc.error().message);
    return kExitUsage;
  }
  b.PrimeProcesses();  // amdgpu/i915/xe: SM% is busy time between two scans (200 ms apart)
  std::vector<ProcessList> lists;
  for (std::size_t pos = 0; pos < info.devices.size(); ++pos) lists.push_back(b.Processes(pos));
  PsReport report = identity::Attribute(info, lists, identity::ReadListedProcesses(lists, *proc));
  auto id_type = identity::ParseGpuIdType(o.gpu_id_type);
  if (!id_type) {
    fmt::print(stderr, "gpulse ps: --kubernetes-gpu-id-type: {}\n", id_type.error().message);
    return kExitUsage;
  }
  PsPodNames names = NamePods(o, info, report, *id_type);
  if (!report.pods.empty()) {
    if (!names.unavailable.empty()) {
      fmt::print(stderr, "gpulse ps: pods are shown by UID: {}\n", names.unavailable);
    }
    for (const auto& [uid, why] : names.naming.reason) {
      fmt::print(stderr, "gpulse ps: pod {} is shown by UID: {}\n", uid, why);
    }
  }
  std::optional<std::string> root;
  if (*proc) root = (*proc)->root();
  bool any_listed = info.devices.empty();
  for (const auto& d : report.devices) {
    any_listed |= d.listed;
    if (!d.error.empty()) fmt::print(stderr, "gpulse ps: GPU {}: {}\n", d.index, d.error);
  }
  for (const auto& s : info.skipped) {
    fmt::print(stderr, "gpulse ps: GPU {} {}: {}\n", s.index, s.lost ? "lost before start" : "skipped", s.reason);
  }
  if (o.out.json()) {
    fmt::print("{}\n", PsDocument(info, report, root, names).dump(2));
  } else if (o.out.csv()) {
    fmt::print("{}", JsonRowsToCsv(CsvRows(PsDocument(info, report, root, names))));
  } else {
    if (info.simulated) {
      fmt::print("# simulated GPUs: scenario {}; processes from {}\n", info.scenario,
                 root ? "procfs tree " + *root : std::string("no procfs tree (--procfs-root)"));
    }
    PrintRows(info, report, o.long_format, names);
    PrintGroups(report, o.long_format, names);
  }
  return any_listed ? kExitOk : kExitFailure;
}

}  // namespace

Subcommand SetupPs(CLI::App& parent) {
  auto o = std::make_shared<PsOptions>();
  CLI::App* app = parent.add_subcommand(
      "ps",
      "List processes using GPUs, with their container and Kubernetes pod, like nvidia-smi pmon");
  AddGpuOptions(*app, o->gpu);
  AddProcfsOption(*app, o->procfs_root);
  AddFormatOptions(*app, o->out, "docs/schema/ps.schema.json");
  app->add_option("--pod-resources-kubelet-socket", o->kubelet_socket,
                  "The kubelet's pod-resources socket: pods are named namespace/name when it "
                  "answers, by their cgroup UID otherwise")
      ->capture_default_str();
  app->add_option("--kubernetes-gpu-id-type", o->gpu_id_type,
                  "How the device plugin names GPUs: uid or device-name (as the exporter's)")
      ->capture_default_str();
  app->add_flag("-l,--long", o->long_format,
                "Long format: full UUIDs and container ids, memory/encoder/decoder utilization, "
                "process type, container runtime, QoS class");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
