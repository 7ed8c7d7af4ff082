#include "cli/visible_devices.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <variant>

#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "identity/cgroup.h"
#include "identity/cuda_visible.h"
#include "identity/environment.h"
#include "identity/runtime_mapping.h"
#include "identity/runtime_scope.h"
#include "sys/procfs.h"

namespace gpulse::cli {
namespace {

using identity::Mapping;
using identity::Refusal;
using identity::RuntimeScope;
using Json = nlohmann::json;

// Whose environment is read, and the GPUs its runtime can open.
struct Source {
  std::optional<unsigned> pid;
  std::string description;  // "this process", "process 4242 (container 3f2a9c1b7d8e)"
  identity::Environment env;
  std::variant<RuntimeScope, Refusal> scope;
};

struct Failure {
  int exit_code;
  std::string message;
};

std::optional<identity::CgroupPlacement> PlacementOf(const sys::RootedFs& proc,
                                                     const std::string& who, std::string* error) {
  auto text = proc.ReadFile(who + "/cgroup", std::size_t{256} * 1024);
  if (!text) {
    if (error != nullptr) *error = text.error().message;
    return std::nullopt;
  }
  auto lines = identity::ParseProcCgroup(*text);
  if (!lines) {
    if (error != nullptr) *error = lines.error().message;
    return std::nullopt;
  }
  return identity::Place(*lines);
}

std::optional<std::string> ContainerId(const std::optional<identity::CgroupPlacement>& p) {
  if (!p || !p->container) return std::nullopt;
  return p->container->id;
}

// The scope of process `pid`: gpulse's own view when both run in the same container (or none).
std::variant<RuntimeScope, Refusal> ScopeOf(const SystemInfo& info, const sys::RootedFs& proc,
                                            unsigned pid, const identity::Environment& env,
                                            std::string& description) {
  std::string error;
  auto target = PlacementOf(proc, std::to_string(pid), &error);
  if (!target) {
    return Refusal{"cannot tell whether process " + std::to_string(pid) +
                   " runs in a container: " + error};
  }
  auto self = PlacementOf(proc, "self", nullptr);  // absent in fixture trees: gpulse on the host
  auto target_id = ContainerId(target);
  auto self_id = ContainerId(self);
  if (target_id) {
    description += fmt::format(" (container {})", target_id->substr(0, 12));
  }
  if (target_id == self_id) return identity::HostScope(info);
  if (!target_id) {
    return Refusal{"gpulse runs in container " + self_id->substr(0, 12) + " and process " +
                   std::to_string(pid) + " does not: it may open GPUs gpulse cannot see"};
  }
  return identity::ContainerScope(env, info, description);
}

std::variant<Source, Failure> LoadSource(const SystemInfo& info, const VisibleOptions& o) {
  Source s;
  if (!o.env_from) {
    s.description = "this process";
    s.env = identity::Environment::FromEntries(sys::CurrentEnvironment());
    s.scope = identity::HostScope(info);
    return s;
  }
  const unsigned pid = *o.env_from;
  auto proc = ChooseProcfs(o.procfs_root, info.simulated);
  if (!proc) return Failure{kExitUsage, proc.error().message};
  if (!*proc) {
    return Failure{kExitUsage,
                   "--env-from with --simulate needs --procfs-root (or GPULSE_PROCFS_ROOT): "
                   "simulated PIDs are not processes of this host"};
  }
  auto entries = sys::ReadEnviron(**proc, pid);
  if (!entries) {
    if (entries.error().code == ErrorCode::kNotFound) {
      return Failure{kExitUsage, fmt::format("--env-from {}: no such process under {} ({})", pid,
                                             (*proc)->root(), entries.error().message)};
    }
    return Failure{kExitFailure, fmt::format("--env-from {}: {} (reading another user's "
                                             "environment needs that user or root)",
                                             pid, entries.error().message)};
  }
  s.pid = pid;
  s.description = "process " + std::to_string(pid);
  s.env = identity::Environment::FromEntries(*entries);
  s.scope = ScopeOf(info, **proc, pid, s.env, s.description);
  return s;
}

Json ToJson(const identity::PhysicalDevice& p, std::size_t ordinal) {
  Json mig = nullptr;
  if (p.mig) {
    mig = {{"uuid", p.mig->uuid},
           {"profile", p.mig->profile},
           {"gpu_instance_id", p.mig->gpu_instance_id},
           {"compute_instance_id", p.mig->compute_instance_id}};
  }
  return {{"ordinal", ordinal},         {"index", p.index}, {"uuid", p.uuid},
          {"pci_bus_id", p.pci_bus_id}, {"name", p.name},   {"mig", mig}};
}

Json EnvJson(const identity::Environment& env, identity::Runtime runtime) {
  Json j = Json::object();
  for (const char* var : identity::RuntimeVariables(runtime)) {
    auto v = env.Get(var);
    j[var] = v ? Json(std::string(*v)) : Json(nullptr);
  }
  return j;
}

Json Document(const SystemInfo* info, const Source* s, const Mapping* m, const std::string& error,
              identity::Runtime runtime) {
  Json j;
  j["schema_version"] = 1;
  j["runtime"] = identity::RuntimeName(runtime);
  j["simulated"] = info != nullptr && info->simulated;
  j["scenario"] = info != nullptr && info->simulated ? Json(info->scenario) : Json(nullptr);
  j["pid"] = s != nullptr && s->pid ? Json(*s->pid) : Json(nullptr);
  j["source"] = s != nullptr ? Json(s->description) : Json(nullptr);
  j["environment"] = s != nullptr ? EnvJson(s->env, runtime) : Json(nullptr);
  j["ordinals"] = Json::array();
  j["refusal"] = nullptr;
  j["notes"] = Json::array();
  if (m != nullptr) {
    for (std::size_t i = 0; i < m->ordinals.size(); ++i)
      j["ordinals"].push_back(ToJson(m->ordinals[i], i));
    if (m->refusal) {
      j["refusal"] = {{"from_ordinal", m->ordinals.size()}, {"reason", m->refusal->reason}};
    }
    for (const auto& n : m->notes) j["notes"].push_back(n);
  }
  j["error"] = error.empty() ? Json(nullptr) : Json(error);
  return j;
}

// "CUDA", "HIP", "OpenCL", "Level Zero": how the runtime names itself.
std::string_view Title(identity::Runtime runtime) {
  switch (runtime) {
    case identity::Runtime::kCuda: return "CUDA";
    case identity::Runtime::kHip: return "HIP";
    case identity::Runtime::kOpenCl: return "OpenCL";
    case identity::Runtime::kLevelZero: return "Level Zero";
  }
  return "CUDA";
}

void PrintText(const Source& s, const Mapping& m, identity::Runtime runtime) {
  fmt::print("{} device numbering for the environment of {}\n", Title(runtime), s.description);
  for (const char* var : identity::RuntimeVariables(runtime)) {
    auto v = s.env.Get(var);
    fmt::print("  {}{}\n", var, v ? fmt::format("=\"{}\"", *v) : std::string(" unset"));
  }
  fmt::print("{:>4}  {:>3}  {:<14}  {:<40}  {:<16}  {}\n",
             runtime == identity::Runtime::kCuda ? "CUDA" : "DEV", "GPU", "MIG", "UUID",
             "PCI BUS ID", "NAME");
  for (std::size_t i = 0; i < m.ordinals.size(); ++i) {
    const auto& p = m.ordinals[i];
    std::string mig = p.mig ? fmt::format("{} {}/{}", p.mig->profile, p.mig->gpu_instance_id,
                                          p.mig->compute_instance_id)
                            : "-";
    fmt::print("{:>4}  {:>3}  {:<14}  {:<40}  {:<16}  {}\n", i, p.index, mig,
               p.mig ? p.mig->uuid : p.uuid, p.pci_bus_id, p.name);
  }
  if (m.ordinals.empty() && !m.refusal) fmt::print("  (no visible devices)\n");
  if (m.refusal) {
    std::string from =
        m.ordinals.empty() ? "all ordinals" : fmt::format("ordinals {} and up", m.ordinals.size());
    fmt::print("refused ({}): {}\n", from, m.refusal->reason);
  }
  for (const auto& n : m.notes) fmt::print("note: {}\n", n);
}

}  // namespace

// The runtime --runtime names, else the one of the host's first vendor.
identity::Runtime ChosenRuntime(const SystemInfo* info, const VisibleOptions& o) {
  if (auto r = identity::ParseRuntime(o.runtime)) return *r;
  return info != nullptr ? identity::DefaultRuntime(*info) : identity::Runtime::kCuda;
}

// A process in another container sees the GPUs its container runtime gave it; gpulse knows that
// set for NVIDIA's container runtime only.
bool OtherContainer(const SystemInfo& info, const RuntimeScope& scope) {
  return scope.positions != identity::HostScope(info).positions;
}

int RunVisible(const SystemInfo& info, const VisibleOptions& o, bool json) {
  const identity::Runtime runtime = ChosenRuntime(&info, o);
  auto loaded = LoadSource(info, o);
  if (auto* f = std::get_if<Failure>(&loaded)) {
    fmt::print(stderr, "gpulse devices: {}\n", f->message);
    if (json) fmt::print("{}\n", Document(&info, nullptr, nullptr, f->message, runtime).dump(2));
    return f->exit_code;
  }
  const Source& s = std::get<Source>(loaded);
  Mapping m;
  if (const auto* refusal = std::get_if<Refusal>(&s.scope)) {
    m.refusal = *refusal;
  } else if (runtime != identity::Runtime::kCuda &&
             OtherContainer(info, std::get<RuntimeScope>(s.scope))) {
    m.refusal = Refusal{fmt::format(
        "{} runs in another container, and which {} GPUs its container was given is known only "
        "for NVIDIA's container runtime",
        s.description, identity::RuntimeVendor(runtime))};
  } else {
    m = identity::ResolveRuntime(runtime, s.env, info, std::get<RuntimeScope>(s.scope));
  }
  if (o.runtime.empty() && runtime == identity::Runtime::kCuda &&
      identity::DefaultRuntime(info) == identity::Runtime::kCuda) {
    for (identity::Runtime other : {identity::Runtime::kHip, identity::Runtime::kLevelZero}) {
      const auto vendor = identity::RuntimeVendor(other);
      for (const DeviceInfo& d : info.devices) {
        if (VendorOf(d) != vendor) continue;
        m.notes.push_back(fmt::format("this host also has {} GPUs: --runtime {} numbers them",
                                      vendor, identity::RuntimeName(other)));
        break;
      }
    }
  }
  if (json) {
    fmt::print("{}\n", Document(&info, &s, &m, "", runtime).dump(2));
  } else {
    if (info.simulated) fmt::print("# simulated GPUs: scenario {}\n", info.scenario);
    PrintText(s, m, runtime);
  }
  return m.refusal ? kExitFailure : kExitOk;
}

int RunVisibleWithoutBackend(const std::string& why, const VisibleOptions& o, bool json) {
  std::string message = "no GPU to map ordinals to: " + why;
  if (json) {
    fmt::print("{}\n", Document(nullptr, nullptr, nullptr, message, ChosenRuntime(nullptr, o)).dump(2));
  } else {
    fmt::print(stderr, "gpulse devices: {}\n", message);
  }
  return kExitFailure;
}

}  // namespace gpulse::cli
