// `gpulse devices [--format table|csv|json]`: the GPUs this host has, like `nvidia-smi -L` / `dcgmi discovery -l`.
// With --visible [--env-from PID]: the CUDA runtime ordinals of an environment and the GPU behind
// each (visible_devices.h).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/gpu_options.h"
#include "cli/output_format.h"
#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "cli/visible_devices.h"
#include "gpu/registry.h"

namespace gpulse::cli {
namespace {

struct DevicesOptions {
  gpu::BackendOptions gpu;
  OutputFormat out;
  VisibleOptions visible;
};

nlohmann::json ToJson(const MigInstance& m) {
  nlohmann::json j{{"gpu_instance_id", m.gpu_instance_id},
                   {"compute_instance_id", m.compute_instance_id},
                   {"uuid", m.uuid},
                   {"profile", m.profile}};
  j["memory_total_bytes"] = m.memory_total_bytes ? nlohmann::json(*m.memory_total_bytes) : nullptr;
  return j;
}

template <typename T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json ToJson(const DeviceInfo& d) {
  nlohmann::json mig = nlohmann::json::array();
  for (const auto& m : d.mig_instances) mig.push_back(ToJson(m));
  return {{"index", d.index},
          {"vendor", VendorOf(d)},
          {"backend", d.backend.empty() ? "nvml" : d.backend},
          {"backend_index", OrNull(d.backend_index)},
          {"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"minor_number", OrNull(d.minor_number)},
          {"memory_total_bytes", OrNull(d.memory_total_bytes)},
          {"power_limit_watts", OrNull(d.power_limit_watts)},
          {"mig_enabled", OrNull(d.mig_enabled)},
          {"mig_instances", mig},
          {"profiling", d.profiling},
          {"profiling_unsupported_reason",
           d.profiling ? nlohmann::json(nullptr) : nlohmann::json(d.profiling_unsupported_reason)}};
}

nlohmann::json ToJson(const SystemInfo* info, const std::string& error) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["backend"] = info ? nlohmann::json(info->backend) : nullptr;
  j["library"] = info ? nlohmann::json(info->library) : nullptr;
  j["simulated"] = info != nullptr && info->simulated;
  j["scenario"] = info && info->simulated ? nlohmann::json(info->scenario) : nullptr;
  j["driver_version"] = info ? OrNull(info->driver_version) : nullptr;
  j["nvml_version"] = info ? OrNull(info->library_version) : nullptr;
  j["devices"] = nlohmann::json::array();
  j["skipped"] = nlohmann::json::array();
  j["backend_errors"] = info ? nlohmann::json(info->backend_errors) : nlohmann::json::array();
  if (info != nullptr) {
    for (const auto& d : info->devices) j["devices"].push_back(ToJson(d));
    for (const auto& s : info->skipped) {
      auto str = [](const std::string& v) {
        return v.empty() ? nlohmann::json(nullptr) : nlohmann::json(v);
      };
      j["skipped"].push_back({{"index", s.index},
                              {"reason", s.reason},
                              {"state", s.lost ? "lost" : "skipped"},
                              {"name", str(s.name)},
                              {"uuid", str(s.uuid)},
                              {"pci_bus_id", str(s.pci_bus_id)},
                              {"identity_source", str(s.identity_source)}});
    }
  }
  j["error"] = error.empty() ? nlohmann::json(nullptr) : nlohmann::json(error);
  return j;
}

std::string MemoryText(const std::optional<std::uint64_t>& bytes) {
  return bytes ? fmt::format("{} MiB", *bytes / (1024 * 1024)) : "memory N/A";
}

void PrintText(const SystemInfo& info) {
  if (info.simulated) {
    fmt::print("Simulated GPUs: scenario {} (NVML simulator {})\n", info.scenario, info.library);
  }
  if (info.backend.find("nvml") != std::string::npos) {
    fmt::print("Driver {}, NVML {}\n", info.driver_version.value_or("N/A"),
               info.library_version.value_or("N/A"));
  } else {  // the sysfs backends: the kernel driver's module version, where it has one
    fmt::print("Backend {}, driver {}\n", info.backend, info.driver_version.value_or("N/A"));
  }
  for (const auto& e : info.backend_errors) fmt::print("Backend not read: {}\n", e);
  // In GPU order, a skipped or lost GPU at its own number (issue 40: it came after the last GPU).
  std::vector<const SkippedDevice*> skipped;
  for (const auto& s : info.skipped) skipped.push_back(&s);
  std::sort(skipped.begin(), skipped.end(),
            [](const SkippedDevice* a, const SkippedDevice* b) { return a->index < b->index; });
  std::size_t next = 0;
  auto skipped_below = [&](unsigned index) {
    for (; next < skipped.size() && skipped[next]->index < index; ++next) {
      const SkippedDevice& s = *skipped[next];
      std::string id = !s.uuid.empty() ? s.uuid : s.pci_bus_id;
      fmt::print("GPU {}: {}{}: {}\n", s.index, s.lost ? "lost" : "skipped",
                 id.empty() ? "" : " (" + id + ", from " + s.identity_source + ")", s.reason);
    }
  };
  for (const auto& d : info.devices) {
    skipped_below(d.index);
    std::string mig = !d.mig_enabled ? "MIG N/A" : (*d.mig_enabled ? "MIG on" : "MIG off");
    // Only another vendor's GPU says which backend reads it (NVIDIA-only output is unchanged).
    std::string via = VendorOf(d) == "nvidia" && !d.backend_index
                          ? ""
                          : fmt::format(" [{} {}]", d.backend, DeviceNode(d));
    fmt::print("GPU {}: {}{} (UUID: {}, PCI: {}, {}, {})\n", d.index, d.name, via, d.uuid,
               d.pci_bus_id, MemoryText(d.memory_total_bytes), mig);
    if (!d.profiling)
      fmt::print("  profiling fields: unsupported ({})\n", d.profiling_unsupported_reason);
    for (const auto& m : d.mig_instances) {
      fmt::print("  MIG {} GI {} CI {} (UUID: {}, {})\n",
                 m.profile.empty() ? "instance" : m.profile, m.gpu_instance_id,
                 m.compute_instance_id, m.uuid, MemoryText(m.memory_total_bytes));
    }
  }
  skipped_below(~0u);
  if (info.devices.empty() && info.skipped.empty()) fmt::print("No GPUs found.\n");
}

// The CSV's rows: every GPU, the skipped and lost ones too (with their state and reason).
nlohmann::json CsvRows(const nlohmann::json& doc) {
  nlohmann::json rows = nlohmann::json::array();
  for (nlohmann::json d : doc["devices"]) {
    d["state"] = "present";
    rows.push_back(std::move(d));
  }
  for (const nlohmann::json& d : doc["skipped"]) rows.push_back(d);
  return rows;
}

int Run(const DevicesOptions& o) {
  auto backend = gpu::OpenBackend(WithProcfs(o.gpu, o.visible.procfs_root));
  if (!backend && backend.error().code != ErrorCode::kUnavailable) {
    fmt::print(stderr, "gpulse devices: {}\n", backend.error().message);
    return kExitUsage;
  }
  if (o.out.csv() && o.visible.visible) {
    fmt::print(stderr, "gpulse devices: --visible prints table or json, not csv\n");
    return kExitUsage;
  }
  if (!backend && o.visible.visible)
    return RunVisibleWithoutBackend(backend.error().message, o.visible, o.out.json());
  if (backend && o.visible.visible) return RunVisible((*backend)->info(), o.visible, o.out.json());
  if (!backend) {  // no driver: say why, list nothing, succeed
    if (o.out.json()) {
      fmt::print("{}\n", ToJson(nullptr, backend.error().message).dump(2));
    } else if (o.out.csv()) {
      fmt::print(stderr, "gpulse devices: no GPUs: {}\n", backend.error().message);
      fmt::print("{}", JsonRowsToCsv(nlohmann::json::array()));
    } else {
      fmt::print("No GPUs found: {}\n", backend.error().message);
    }
    return kExitOk;
  }
  const SystemInfo& info = (*backend)->info();
  if (o.out.json()) {
    fmt::print("{}\n", ToJson(&info, "").dump(2));
  } else if (o.out.csv()) {
    fmt::print("{}", JsonRowsToCsv(CsvRows(ToJson(&info, ""))));
  } else {
    PrintText(info);
  }
  return kExitOk;
}

}  // namespace

Subcommand SetupDevices(CLI::App& parent) {
  auto opts = std::make_shared<DevicesOptions>();
  CLI::App* app =
      parent.add_subcommand("devices", "List GPUs: index, name, UUID, PCI bus id, memory, MIG");
  AddGpuOptions(*app, opts->gpu);
  AddFormatOptions(*app, opts->out,
                   "docs/schema/devices.schema.json; with --visible, "
                   "docs/schema/visible-devices.schema.json");
  CLI::Option* visible = app->add_flag(
      "--visible", opts->visible.visible,
      "Show each runtime ordinal of an environment and the physical GPU behind it "
      "(CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER; HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, "
      "GPU_DEVICE_ORDINAL; ZE_AFFINITY_MASK, ONEAPI_DEVICE_SELECTOR; docs/identity.md)");
  app->add_option("--runtime", opts->visible.runtime,
                  "With --visible: whose numbering (default: cuda on a host with NVIDIA GPUs, "
                  "else hip for AMD, else level_zero for Intel)")
      ->check(CLI::IsMember({"cuda", "hip", "opencl", "level_zero"}))
      ->needs(visible);
  app->add_option("--env-from", opts->visible.env_from,
                  "With --visible: read the environment of process PID (/proc/PID/environ) "
                  "instead of this one")
      ->needs(visible);
  AddProcfsOption(*app, opts->visible.procfs_root);
  return {app, [opts] { return Run(*opts); }};
}

}  // namespace gpulse::cli
