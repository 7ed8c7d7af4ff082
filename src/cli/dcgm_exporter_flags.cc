#include "cli/dcgm_exporter_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace gpulse::cli {
namespace {

using enum DcgmDisposition;

constexpr std::string_view kPodUid =
    "the kubelet's pod-resources answer has no pod UID and gpulse does not call the Kubernetes API "
    "server; pod, namespace and container labels come with -k";
constexpr std::string_view kPodLabels =
    "pod labels need the Kubernetes API server, which gpulse does not call; pod, namespace and "
    "container labels come with -k";
constexpr std::string_view kVirtualGpus =
    "with -k gpulse always repeats a time-sliced GPU's series per container (vgpu label) and adds "
    "per-pod gpulse_pod_* series (docs/exporter.md, \"Kubernetes pods\")";
constexpr std::string_view kDra = "Dynamic Resource Allocation claims are not mapped to pods";
constexpr std::string_view kDumps = "gpulse writes no debug dumps";
constexpr std::string_view kDcgmLog = "gpulse reads NVML directly; there is no DCGM library to log";

// dcgm-exporter's options (its pkg/cmd/app.go, research/dcgm.md section 4), in its order. An empty
// default of a kDefaultOnly option means that any value is refused.
constexpr auto kFlags = std::to_array<DcgmFlagSpec>({
    {"collectors", "f", "DCGM_EXPORTER_COLLECTORS", false, "", kGpulseOption, ""},
    {"address", "a", "DCGM_EXPORTER_LISTEN", false, "", kGpulseOption, ""},
    {"collect-interval", "c", "DCGM_EXPORTER_INTERVAL", false, "30000", kHonoured, ""},
    {"kubernetes", "k", "DCGM_EXPORTER_KUBERNETES", true, "false", kHonoured, ""},
    {"use-old-namespace", "o", "DCGM_EXPORTER_USE_OLD_NAMESPACE", true, "false", kHonoured, ""},
    {"cpu-devices", "p", "DCGM_EXPORTER_CPU_DEVICES_STR", false, "f", kDefaultOnly,
     "gpulse reads no CPU entities"},
    {"configmap-data", "m", "DCGM_EXPORTER_CONFIGMAP_DATA", false, "none", kDefaultOnly,
     "counters are not read from a ConfigMap through the Kubernetes API; mount it as a file and "
     "pass -f"},
    {"remote-hostengine-info", "r", "DCGM_REMOTE_HOSTENGINE_INFO", false, "", kDefaultOnly,
     "gpulse reads NVML directly; there is no DCGM hostengine to connect to"},
    {"kubernetes-enable-pod-labels", "", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", true,
     "false", kDefaultOnly, kPodLabels},
    {"kubernetes-enable-pod-uid", "", "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", true, "false",
     kDefaultOnly, kPodUid},
    {"kubernetes-gpu-id-type", "", "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", false, "uid", kHonoured,
     ""},
    {"kubernetes-pod-label-allowlist-regex", "",
     "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", false, "", kDefaultOnly, kPodLabels},
    {"devices", "d", "DCGM_EXPORTER_DEVICES_STR", false, "f", kHonoured, ""},
    {"no-hostname", "n", "DCGM_EXPORTER_NO_HOSTNAME", true, "", kGpulseOption, ""},
    {"switch-devices", "s", "DCGM_EXPORTER_OTHER_DEVICES_STR", false, "f", kDefaultOnly,
     "gpulse reads no NvSwitch entities"},
    {"fake-gpus", "", "DCGM_EXPORTER_USE_FAKE_GPUS", true, "false", kDefaultOnly,
     "use --simulate SCENARIO for simulated GPUs"},
    {"web-config-file", "", "DCGM_EXPORTER_WEB_CONFIG_FILE", false, "", kGpulseOption, ""},
    {"xid-count-window-size", "x", "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", false, "300000",
     kDefaultOnly,
     "the windowed DCGM_EXP_XID_ERRORS_COUNT family is not served (gpulse_xid_errors_total counts "
     "every XID)"},
    {"replace-blanks-in-model-name", "rbmn", "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", true,
     "false", kHonoured, ""},
    {"debug", "", "DCGM_EXPORTER_DEBUG", true, "false", kDefaultOnly, "gpulse has no debug log"},
    {"clock-events-count-window-size", "", "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", false,
     "300000", kDefaultOnly, "the windowed DCGM_EXP_CLOCK_EVENTS_COUNT family is not served"},
    {"enable-dcgm-log", "", "DCGM_EXPORTER_ENABLE_DCGM_LOG", true, "false", kDefaultOnly, kDcgmLog},
    {"dcgm-log-level", "", "DCGM_EXPORTER_DCGM_LOG_LEVEL", false, "NONE", kDefaultOnly, kDcgmLog},
    {"log-format", "", "DCGM_EXPORTER_LOG_FORMAT", false, "text", kDefaultOnly,
     "gpulse logs plain text only"},
    {"pod-resources-kubelet-socket", "", "DCGM_POD_RESOURCES_KUBELET_SOCKET", false,
     "/var/lib/kubelet/pod-resources/kubelet.sock", kHonoured, ""},
    {"hpc-job-mapping-dir", "", "DCGM_HPC_JOB_MAPPING_DIR", false, "", kHonoured, ""},
    {"nvidia-resource-names", "", "NVIDIA_RESOURCE_NAMES", false, "", kHonoured, ""},
    {"kubernetes-virtual-gpus", "", "KUBERNETES_VIRTUAL_GPUS", true, "false", kDefaultOnly,
     kVirtualGpus},
    {"dump-enabled", "", "DCGM_EXPORTER_DUMP_ENABLED", true, "false", kDefaultOnly, kDumps},
    {"dump-directory", "", "DCGM_EXPORTER_DUMP_DIRECTORY", false, "/tmp/dcgm-exporter-debug",
     kDefaultOnly, kDumps},
    {"dump-retention", "", "DCGM_EXPORTER_DUMP_RETENTION", false, "24", kDefaultOnly, kDumps},
    {"dump-compression", "", "DCGM_EXPORTER_DUMP_COMPRESSION", true, "true", kDefaultOnly, kDumps},
    {"kubernetes-enable-dra", "", "KUBERNETES_ENABLE_DRA", true, "false", kDefaultOnly, kDra},
    {"disable-startup-validate", "", "DISABLE_STARTUP_VALIDATE", true, "false", kDefaultOnly,
     "gpulse always checks its configuration at start"},
    {"enable-gpu-bind-unbind-watch", "", "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", true,
     "false", kDefaultOnly, "GPUs bound or unbound after start are not picked up"},
    {"gpu-bind-unbind-poll-interval", "", "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", false,
     "1s", kDefaultOnly, "GPUs bound or unbound after start are not picked up"},
    {"enable-pprof", "", "DCGM_EXPORTER_ENABLE_PPROF", true, "false", kDefaultOnly,
     "gpulse serves no /debug/pprof"},
    {"web-systemd-socket", "", "DCGM_EXPORTER_SYSTEMD_SOCKET", true, "false", kDefaultOnly,
     "systemd socket activation is not supported"},
});

// The CLI11 name list: "--name" plus the alias (a short "-k", or a long "--rbmn").
std::string Names(const DcgmFlagSpec& f) {
  std::string names = "--" + std::string(f.name);
  if (!f.alias.empty()) names += (f.alias.size() == 1 ? ",-" : ",--") + std::string(f.alias);
  return names;
}

std::string Named(const DcgmFlagSpec& f) {
  std::string s = "--" + std::string(f.name);
  if (!f.alias.empty()) s += fmt::format(" (-{})", f.alias);
  if (!f.env.empty()) s += fmt::format(" / ${}", f.env);
  return s;
}

// gpulse's own long options of the exporter beyond dcgm-exporter's (src/cli/exporter.cc,
// src/cli/gpu_options.cc), for the Go-style rewrite.
struct GpulseLongOption {
  std::string_view name;
  bool takes_value;
};
constexpr GpulseLongOption kGpulseLongOptions[] = {
    {"hostname", true},
    {"min-refresh-ms", true},
    {"health-staleness-ms", true},
    {"max-connections", true},
    {"max-connections-per-peer", true},
    {"simulate", true},
    {"nvml-lib", true},
    {"once", false},
    {"print-counters", false},
    {"kubelet-refresh-ms", true},
    {"slurm-jobs", false},
    {"procfs-root", true},
};

const GpulseLongOption* GpulseOption(std::string_view name) {
  for (const GpulseLongOption& g : kGpulseLongOptions) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

bool IsKnownLongName(std::string_view name) {
  for (const DcgmFlagSpec& f : kFlags) {
    if (name == f.name || (f.alias.size() > 1 && name == f.alias)) return true;
  }
  return GpulseOption(name) != nullptr;
}

}  // namespace

std::span<const DcgmFlagSpec> DcgmExporterFlags() { return kFlags; }

void AddDcgmExporterFlags(CLI::App& app, DcgmCompat& compat) {
  for (const DcgmFlagSpec& f : kFlags) {
    CLI::Option* opt = nullptr;
    switch (f.disposition) {
      case kGpulseOption:
        opt = app.get_option("--" + std::string(f.name));
        break;
      case kHonoured:
        if (f.name == "devices") {
          opt =
              app.add_option(Names(f), compat.devices,
                             "dcgm-exporter's device selection: f (every GPU, MIG instances for "
                             "their readings), g[:0,1 or 0-3] (GPUs only), i (MIG instances only)")
                  ->capture_default_str();
        } else if (f.name == "collect-interval") {
          opt = app.add_option(Names(f), compat.collect_interval_ms,
                               "dcgm-exporter's collection interval in ms: taken as "
                               "--min-refresh-ms (readings are at most that old)");
        } else if (f.name == "kubernetes") {
          opt =
              app.add_flag(Names(f), compat.kubernetes,
                           "Label series with the pod, namespace and container holding the GPU or "
                           "MIG instance (the kubelet's pod-resources API)");
        } else if (f.name == "kubernetes-gpu-id-type") {
          opt = app.add_option(Names(f), compat.kubernetes_gpu_id_type,
                               "How the device plugin names GPUs: uid (GPU-/MIG- UUIDs) or "
                               "device-name (nvidia0, nvidia0/gi1)")
                    ->capture_default_str();
        } else if (f.name == "pod-resources-kubelet-socket") {
          opt = app.add_option(Names(f), compat.pod_resources_socket,
                               "The kubelet's pod-resources socket (with -k)")
                    ->capture_default_str();
        } else if (f.name == "nvidia-resource-names") {
          opt = app.add_option(Names(f), compat.nvidia_resource_names,
                               "More resource names to attribute to pods besides nvidia.com/gpu "
                               "and nvidia.com/mig-* (comma-separated)");
        } else if (f.name == "hpc-job-mapping-dir") {
          opt = app.add_option(Names(f), compat.hpc_job_mapping_dir,
                               "Label series with hpc_job from the files a Slurm prolog writes in "
                               "DIR (one per GPU index or gpu.gi MIG instance, a job id per line), "
                               "read at every device read; not with --slurm-jobs")
                    ->type_name("DIR");
        } else if (f.name == "use-old-namespace") {
          opt = app.add_flag(Names(f), compat.use_old_namespace,
                             "dcgm-exporter's 1.x label name: uuid instead of UUID (1.x family "
                             "names such as dcgm_sm_clock work in the counters file either way)");
        } else {
          opt = app.add_flag(Names(f), compat.replace_blanks_in_model_name,
                             "dcgm-exporter's: modelName with its blanks replaced by '-'");
        }
        break;
      case kDefaultOnly:
        if (f.is_bool) {
          bool& target = compat.raw_bool.emplace_back(f.default_value == "true");
          opt = app.add_flag(Names(f), target, "dcgm-exporter's; only its default is accepted");
        } else {
          std::string& target = compat.raw.emplace_back(f.default_value);
          opt = app.add_option(Names(f), target, "dcgm-exporter's; only its default is accepted");
        }
        opt->group("dcgm-exporter options gpulse does not implement");
        compat.declared.emplace_back(&f, opt);
        break;
    }
    if (opt != nullptr && !f.env.empty()) opt->envname(std::string(f.env));
  }
}

Status CheckDcgmExporterFlags(const DcgmCompat& compat) {
  std::size_t next_bool = 0, next_raw = 0;
  for (const auto& [f, opt] : compat.declared) {
    std::string value =
        f->is_bool ? (compat.raw_bool[next_bool++] ? "true" : "false") : compat.raw[next_raw++];
    if (opt->count() == 0) continue;  // neither the flag nor its variable: dcgm-exporter's default
    if (value == f->default_value) continue;  // given, but at the default: changes nothing
    return InvalidArgument(fmt::format(
        "{} = \"{}\": {} (gpulse accepts this dcgm-exporter option only at its default, \"{}\"; "
        "docs/exporter.md, \"dcgm-exporter's flags and variables\")",
        Named(*f), value, f->why, f->default_value));
  }
  if (compat.collect_interval_ms &&
      (*compat.collect_interval_ms < 0 || *compat.collect_interval_ms > 60'000)) {
    return InvalidArgument(
        fmt::format("--collect-interval (-c) / $DCGM_EXPORTER_INTERVAL = {}: gpulse takes it as "
                    "--min-refresh-ms, which is 0..60000 ms",
                    *compat.collect_interval_ms));
  }
  return Status::Ok();
}

const DcgmFlagSpec* ShortAlias(char c) {
  for (const DcgmFlagSpec& f : kFlags) {
    if (f.alias.size() == 1 && f.alias[0] == c) return &f;
  }
  return nullptr;
}

// Whether `token` (a whole option without "=value") is one that takes the next argument as its
// value, so that the next argument is left as it is even when it looks like a flag (`--hostname
// -once`).
bool TakesValue(std::string_view token) {
  if (token.find('=') != std::string_view::npos) return false;
  if (token.size() == 2 && token[0] == '-') {
    const DcgmFlagSpec* f = ShortAlias(token[1]);
    return f != nullptr && !f->is_bool;
  }
  if (!token.starts_with("--")) return false;
  std::string_view name = token.substr(2);
  for (const DcgmFlagSpec& f : kFlags) {
    if (name == f.name || (f.alias.size() > 1 && name == f.alias)) return !f.is_bool;
  }
  const GpulseLongOption* g = GpulseOption(name);
  return g != nullptr && g->takes_value;
}

void RewriteGoStyleFlags(std::vector<std::string>& args) {
  bool value_next = false;  // the previous argument was an option that takes this one as its value
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (std::exchange(value_next, false)) continue;
    if (a.size() < 3 || a[0] != '-' || a[1] == '-') {
      value_next = TakesValue(a);
      continue;
    }
    const DcgmFlagSpec* alias = a[2] == '=' ? ShortAlias(a[1]) : nullptr;
    if (alias != nullptr && alias->is_bool) {  // Go's -k=false: CLI11 takes --kubernetes=false
      a = "--" + std::string(alias->name) + a.substr(2);
      continue;
    }
    if (alias != nullptr) {  // Go's -f=/path: CLI11 would take "=/path" as the value
      std::string value = a.substr(3);
      a.resize(2);
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(value));
      ++i;
      continue;
    }
    std::string_view name = std::string_view(a).substr(1);
    name = name.substr(0, name.find('='));
    if (IsKnownLongName(name)) a.insert(0, "-");
    value_next = TakesValue(a);
  }
}

}  // namespace gpulse::cli
