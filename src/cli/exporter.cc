// `gpulse exporter`: a Prometheus endpoint compatible with dcgm-exporter (same families, labels and
// units), read on scrape, with /health, a JSON API, TLS and basic auth. See docs/exporter.md.
// `gpulse agent`: the same daemon with state: groups, watches, history, job statistics and the
// management API on a unix socket too (docs/agent.md, docs/adr/0018-node-agent.md).
#include "exporter/exporter.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <optional>

#include "agent/agent.h"
#include "cli/build_info.h"
#include "cli/dcgm_exporter_flags.h"
#include "cli/gpu_options.h"
#include "cli/procfs_options.h"
#include "cli/subcommand.h"
#include "core/utf8.h"
#include "faults/fault_backend.h"
#include "gpu/registry.h"
#include "identity/mask_tokens.h"
#include "identity/pod_resources.h"
#include "k8s/pod_resources_client.h"
#include "net/web_config.h"
#include "sys/heap.h"
#include "sys/runtime_dir.h"

namespace gpulse::cli {
namespace {

struct ExporterCliOptions {
  gpu::BackendOptions gpu;
  exporter::ExporterOptions exp;
  std::string hostname;
  bool no_hostname = false;
  bool once = false;
  bool print_counters = false;
  std::optional<std::string> kmsg;  // --kmsg: the kernel log to read ("none": none)
  DcgmCompat dcgm;  // dcgm-exporter's own flags and variables
  CLI::Option* min_refresh = nullptr;
  CLI::Option* staleness = nullptr;
  // `gpulse agent` only.
  bool agent = false;
  agent::AgentOptions agent_options;
  std::string socket;  // "": sys::ChooseAgentSocket (the system path, else a per-user one)
  std::string socket_mode = "0660";
  std::string socket_group;
  std::int64_t checkpoint_s = 300;
  std::size_t history_limit_mib = 1024;
  bool allow_tcp_writes = false;
  std::string procfs_root;
  std::int64_t kubelet_refresh_ms = 5000;  // -k: how often the kubelet is asked
};

// The agent's options from the command line and the environment.
Status ApplyAgentFlags(ExporterCliOptions& o) {
  if (!o.agent) return Status::Ok();
  o.agent_options.checkpoint_ms = o.checkpoint_s * 1000;
  o.agent_options.history_limit_bytes = o.history_limit_mib << 20;
  o.agent_options.min_refresh_ms = o.exp.min_refresh_ms;
  o.agent_options.version = kGpulseVersion;
  o.agent_options.hostname = o.exp.hostname.value_or("");
  if (!o.procfs_root.empty()) o.agent_options.procfs_root = o.procfs_root;
  if (o.socket.empty()) {
    auto choice = sys::ChooseAgentSocket();
    if (!choice) return choice.error();
    o.socket = choice->path;
    if (!choice->why.empty()) {
      fmt::print(stderr, "gpulse agent: {}: the management API's socket is {} (the CLI finds it)\n",
                 choice->why, o.socket);
    }
  }
  if (o.socket != "none") {
    o.exp.unix_socket_path = o.socket;
    char* end = nullptr;
    unsigned long mode = std::strtoul(o.socket_mode.c_str(), &end, 8);
    if (o.socket_mode.empty() || *end != '\0' || mode > 0777) {
      return InvalidArgument("--socket-mode \"" + o.socket_mode +
                             "\" is not an octal mode such as 0660");
    }
    o.exp.unix_socket_mode = static_cast<unsigned>(mode);
    if (!o.socket_group.empty()) {
      group* g = getgrnam(o.socket_group.c_str());
      if (g == nullptr)
        return InvalidArgument("--socket-group: no group named \"" + o.socket_group + "\"");
      o.exp.unix_socket_gid = g->gr_gid;
    }
  }
  o.exp.allow_writes = true;
  o.exp.max_body_bytes = 64 * 1024;
  // `gpulse inject` writes the driver's Xid lines into the kernel-log file the agent reads.
  if (struct stat st {}; o.kmsg && ::stat(o.kmsg->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    o.agent_options.inject_kernel_log = *o.kmsg;
  }
  o.agent_options.tcp_writes = o.allow_tcp_writes;
  if (!o.exp.web_config_file.empty()) {
    auto web = net::LoadWebConfig(o.exp.web_config_file);
    if (!web) return web.error();
    o.agent_options.tcp_writes = o.agent_options.tcp_writes || !web->basic_auth_users.empty();
  }
  // The simulator's clock variable drives the agent's simulated clock (docs/agent.md).
  if (const char* clock = std::getenv("GPULSE_SIM_CLOCK"); clock != nullptr && *clock != '\0') {
    if (o.gpu.simulate.empty()) {
      return InvalidArgument("GPULSE_SIM_CLOCK drives a simulated clock: it needs --simulate");
    }
    char* end = nullptr;
    double s = std::strtod(clock, &end);
    if (*end != '\0' || !(s >= 0)) {
      return InvalidArgument(std::string("GPULSE_SIM_CLOCK: \"") + clock +
                             "\" is not a number of seconds >= 0");
    }
    o.agent_options.simulated_clock_s = s;
  }
  return Status::Ok();
}

int UsageOrFailure(const Error& e) {
  fmt::print(stderr, "gpulse exporter: {}\n", e.message);
  return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ? kExitUsage
                                                                                 : kExitFailure;
}

// dcgm-exporter's rule: $NODE_NAME (set by Kubernetes DaemonSets), else the host name. A value
// given by the user that is not valid UTF-8 is refused, its source named: the page would not parse.
// The system's host name is taken with bad bytes replaced (prom/writer.h), as a driver's string.
Result<std::optional<std::string>> ChooseHostname(const ExporterCliOptions& o) {
  if (o.no_hostname) return std::optional<std::string>();
  auto given = [](const std::string& value, const char* source) -> Result<std::optional<std::string>> {
    if (!IsValidUtf8(value)) {
      return InvalidArgument(std::string(source) +
                             ": the Hostname label value is not valid UTF-8");
    }
    return std::optional<std::string>(value);
  };
  if (!o.hostname.empty()) return given(o.hostname, "--hostname");
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0')
    return given(node, "$NODE_NAME");
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0) return std::optional<std::string>(std::string(buf));
  return std::optional<std::string>();
}

// -k and its companions (ADR 0021). The id type and resource names are checked even without -k.
Status ApplyKubernetesFlags(ExporterCliOptions& o) {
  auto id_type = identity::ParseGpuIdType(o.dcgm.kubernetes_gpu_id_type);
  if (!id_type) {
    return InvalidArgument("--kubernetes-gpu-id-type / $DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE: " +
                           id_type.error().message);
  }
  k8s::WatcherOptions& w = o.exp.kubelet;
  w.id_type = *id_type;
  w.list.socket_path = o.dcgm.pod_resources_socket;
  w.interval = std::chrono::milliseconds(o.kubelet_refresh_ms);
  for (std::string_view name : identity::SplitCommas(o.dcgm.nvidia_resource_names)) {
    if (name.empty()) continue;
    if (name.find('/') == std::string_view::npos) {
      return InvalidArgument(fmt::format(
          "--nvidia-resource-names / $NVIDIA_RESOURCE_NAMES: \"{}\" is not a resource name such "
          "as nvidia.com/a100",
          name));
    }
    w.extra_resources.emplace_back(name);
  }
  o.exp.kubernetes = o.dcgm.kubernetes;
  if (o.exp.kubernetes && o.exp.slurm_jobs) {
    return InvalidArgument(
        "-k (Kubernetes pods) and --slurm-jobs (Slurm jobs) label the same series: "
        "give one");
  }
  if (!o.exp.kubernetes) return Status::Ok();
  if (w.list.socket_path.empty()) {
    return InvalidArgument(
        "--pod-resources-kubelet-socket / $DCGM_POD_RESOURCES_KUBELET_SOCKET is empty");
  }
  return k8s::CheckKubeletSocket(w.list.socket_path);
}

// dcgm-exporter's --hpc-job-mapping-dir (docs/exporter.md, "Slurm jobs"): hpc_job from a prolog's
// files. One source of hpc_job at a time: with --slurm-jobs too, which of two disagreeing answers
// would be the job's?
Status ApplyJobMappingFlags(ExporterCliOptions& o) {
  o.exp.hpc_job_mapping_dir = o.dcgm.hpc_job_mapping_dir;
  if (o.exp.hpc_job_mapping_dir.empty()) return Status::Ok();
  if (o.exp.slurm_jobs) {
    return InvalidArgument(
        "--hpc-job-mapping-dir (hpc_job from a Slurm prolog's files) and --slurm-jobs (hpc_job "
        "from the processes' cgroups) label the same series: give one");
  }
  return exporter::CheckJobMappingDir(o.exp.hpc_job_mapping_dir);
}

// dcgm-exporter's honoured options, in gpulse's terms; refuses the ones gpulse cannot honour.
Status ApplyDcgmExporterFlags(ExporterCliOptions& o) {
  if (Status s = CheckDcgmExporterFlags(o.dcgm); !s.ok()) return s;
  o.exp.replace_blanks_in_model_name = o.dcgm.replace_blanks_in_model_name;
  o.exp.use_old_namespace = o.dcgm.use_old_namespace;
  auto devices = exporter::ParseDeviceSelection(o.dcgm.devices);
  if (!devices) {
    return InvalidArgument("--devices (-d) / $DCGM_EXPORTER_DEVICES_STR: " +
                           devices.error().message);
  }
  o.exp.devices = *devices;
  if (Status s = ApplyKubernetesFlags(o); !s.ok()) return s;
  if (Status s = ApplyJobMappingFlags(o); !s.ok()) return s;
  // $DCGM_EXPORTER_INTERVAL from the pod's environment yields to an explicit --min-refresh-ms (a
  // flag wins over a variable); -c and --min-refresh-ms both on the command line contradict.
  const char* env_interval = std::getenv("DCGM_EXPORTER_INTERVAL");
  if (o.dcgm.collect_interval_ms && o.min_refresh->count() > 0 && env_interval != nullptr &&
      std::to_string(*o.dcgm.collect_interval_ms) == env_interval) {
    o.dcgm.collect_interval_ms.reset();
  }
  if (o.dcgm.collect_interval_ms) {
    if (o.min_refresh->count() > 0) {
      return InvalidArgument(
          "--collect-interval (-c, $DCGM_EXPORTER_INTERVAL) and --min-refresh-ms say the same "
          "thing: give one");
    }
    o.exp.min_refresh_ms = *o.dcgm.collect_interval_ms;
    // A read may be that old before a scrape refreshes it: /health must not call it stale sooner.
    if (o.staleness->count() == 0) {
      o.exp.staleness_ms += o.exp.min_refresh_ms;
    }
  }
  return Status::Ok();
}

// Every read goes through the fault layer (docs/faults.md): the kernel log's Xids with NVML's,
// and the recommended actions. Real GPUs read /dev/kmsg unless told otherwise; simulated ones have
// no kernel log of their own, so only a --kmsg file. A log that cannot be read is stated, not fatal.
std::unique_ptr<gpu::Backend> WithFaultLayer(const ExporterCliOptions& o,
                                             std::unique_ptr<gpu::Backend> backend) {
  faults::FaultOptions f;
  f.kernel_log = o.kmsg.value_or(backend->info().simulated ? "none" : "/dev/kmsg");
  if (f.kernel_log == "none") f.kernel_log.clear();
  f.procfs_root = o.procfs_root.empty() ? "/proc" : o.procfs_root;
  auto layer = std::make_unique<faults::FaultBackend>(std::move(backend), f);
  const faults::KernelLogStatus k = layer->kernel_log();
  if (!k.error.empty()) {
    fmt::print(stderr, "gpulse {}: kernel log not read, Xids come from NVML only: {}\n",
               o.agent ? "agent" : "exporter", k.error);
  }
  return layer;
}

// The agent owns the reads: it is created over the backend before the exporter takes the backend,
// shut down after the server drains, and destroyed after the exporter (which reads through it).
int RunAgent(ExporterCliOptions& o, std::unique_ptr<gpu::Backend> backend,
             std::shared_ptr<const exporter::CounterSet> counters) {
  auto agent = agent::Agent::Create(o.agent_options, *backend);
  if (!agent) {
    fmt::print(stderr, "gpulse agent: {}\n", agent.error().message);
    return agent.error().code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  // The agent has only read its state so far: a refused address leaves the database untouched, and
  // no worker reads the backend the failed exporter has already destroyed.
  auto e = exporter::Exporter::Create(o.exp, std::move(backend), std::move(counters), agent->get());
  if (!e) return UsageOrFailure(e.error());
  if (Status s = (*agent)->Start(); !s.ok()) {
    fmt::print(stderr, "gpulse agent: {}\n", s.error().message);
    return kExitFailure;
  }
  (*e)->Run();
  (*agent)->Shutdown();
  e->reset();
  return kExitOk;
}

int Run(ExporterCliOptions& o) {
  if (Status s = ApplyDcgmExporterFlags(o); !s.ok()) return UsageOrFailure(s.error());
  auto hostname = ChooseHostname(o);
  if (!hostname) return UsageOrFailure(hostname.error());
  o.exp.hostname = *hostname;
  if (Status s = ApplyAgentFlags(o); !s.ok()) return UsageOrFailure(s.error());
  o.exp.version = kGpulseVersion;
  o.exp.commit = kGpulseGitCommit;
  auto counters = exporter::LoadCounterSet(o.exp);
  if (!counters) return UsageOrFailure(counters.error());
  if (o.print_counters) {
    fmt::print("{}", exporter::FormatCounters(**counters));
    return kExitOk;
  }
  auto backend = gpu::OpenBackend(WithProcfs(o.gpu, o.procfs_root));
  if (!backend) {
    fmt::print(stderr, "gpulse exporter: {}\n", backend.error().message);
    return backend.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  auto proc = ChooseProcfs(o.procfs_root, (*backend)->info().simulated);
  if (!proc) return UsageOrFailure(proc.error());
  if (*proc) o.exp.procfs_root = (*proc)->root();
  std::unique_ptr<gpu::Backend> read = WithFaultLayer(o, std::move(backend).value());
  if (o.once) {
    fmt::print("{}", exporter::RenderOnce(*read, *counters, o.exp));
    return kExitOk;
  }
  // A body is allocated and freed per scrape (80 kB on a MIG node, more with many GPUs): keep the
  // freed pages for the next one instead of faulting in fresh ones every time (sys/heap.h).
  sys::KeepFreedMemory(16 << 20, 16 << 20);
  sys::LimitArenas(2);  // the loop's and one for every other thread: RSS that does not creep
  if (o.agent) return RunAgent(o, std::move(read), *counters);
  auto e = exporter::Exporter::Create(o.exp, std::move(read), *counters);
  if (!e) return UsageOrFailure(e.error());
  (*e)->Run();
  return kExitOk;
}

void AddAgentOptions(CLI::App& app, ExporterCliOptions& o) {
  app.add_option("--state-dir", o.agent_options.state_dir,
                 "Where the agent keeps its database (groups, watches, jobs, history)")
      ->capture_default_str();
  app.add_option("--socket", o.socket,
                 "Unix socket of the management API (\"none\": TCP only; default "
                 "/run/gpulse/agent.sock, made as root, else $XDG_RUNTIME_DIR/gpulse/agent.sock or "
                 "/tmp/gpulse-UID/agent.sock)");
  app.add_option("--socket-mode", o.socket_mode, "Permissions of the unix socket (octal)")
      ->capture_default_str();
  app.add_option("--socket-group", o.socket_group,
                 "Group of the unix socket: its members may use the API (default: the agent's)");
  app.add_option("--checkpoint-s", o.checkpoint_s,
                 "Save history and job activity this often (seconds; always at shutdown)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400));
  app.add_flag("--allow-tcp-writes", o.allow_tcp_writes,
               "Accept changes (groups, watches, jobs) over TCP without basic auth (default: only "
               "with basic auth in the web config, and always on the unix socket)");
  app.add_option("--alertmanager", o.agent_options.alertmanager_url,
                 "Send policy violations to this Alertmanager (http://HOST:PORT[/PREFIX], its v2 "
                 "API)");
  app.add_flag("--health-in-health", o.agent_options.health_in_health_endpoint,
               "/health fails (503) while a health watch finds a GPU failing");
  app.add_flag("--allow-reset", o.agent_options.allow_reset,
               "Let a policy's action reset a real GPU (as root, through sysfs); simulated GPUs "
               "are reset without it");
  app.add_option("--dev-root", o.agent_options.dev_root,
                 "Where diagnostics look for /dev/nvidia* (tests: a fixture directory)")
      ->capture_default_str();
  app.add_option("--history-limit-mib", o.history_limit_mib,
                 "Refuse watches whose history could need more memory than this")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
}

// The agent's Kubernetes mode: the exporter's -k and its companions, as gpulse flags (the agent is
// not a dcgm-exporter drop-in, so no DCGM_EXPORTER_* variables).
void AddAgentKubernetesFlags(CLI::App& app, ExporterCliOptions& o) {
  app.add_flag("-k,--kubernetes", o.dcgm.kubernetes,
               "Label series with the pod, namespace and container holding the GPU or MIG "
               "instance (the kubelet's pod-resources API), and export per-pod usage");
  app.add_option("--pod-resources-kubelet-socket", o.dcgm.pod_resources_socket,
                 "The kubelet's pod-resources socket (with -k)")
      ->capture_default_str();
  app.add_option("--kubernetes-gpu-id-type", o.dcgm.kubernetes_gpu_id_type,
                 "How the device plugin names GPUs: uid (GPU-/MIG- UUIDs) or device-name "
                 "(nvidia0, nvidia0/gi1)")
      ->capture_default_str();
}

Subcommand SetupServe(CLI::App& parent, bool agent) {
  auto o = std::make_shared<ExporterCliOptions>();
  o->agent = agent;
  CLI::App* app =
      agent ? parent.add_subcommand(
                  "agent",
                  "The node agent: the exporter plus groups, watches with history, job statistics "
                  "and a management API (see docs/agent.md)")
            : parent.add_subcommand(
                  "exporter",
                  "Serve GPU metrics to Prometheus, compatible with dcgm-exporter (see "
                  "docs/exporter.md)");
  if (agent) AddAgentOptions(*app, *o);
  AddGpuOptions(*app, o->gpu);
  app->add_option("-a,--address", o->exp.address, "Listen address: :PORT, HOST:PORT or [IPv6]:PORT")
      ->capture_default_str();
  app->add_option(
      "-f,--collectors", o->exp.counters_file,
      "Counters file in dcgm-exporter's CSV format (default: the built-in set; SIGHUP reloads)");
  o->min_refresh = app->add_option("--min-refresh-ms", o->exp.min_refresh_ms,
                                   "Scrapes within this many ms of a device read share it")
                       ->capture_default_str()
                       ->check(CLI::Range(0, 60'000));
  auto* host =
      app->add_option("--hostname", o->hostname,
                      "Value of the Hostname label (default: $NODE_NAME, else the host name)");
  auto* nohost = app->add_flag("-n,--no-hostname", o->no_hostname, "Omit the Hostname label");
  host->excludes(nohost);
  app->add_option("--web-config-file", o->exp.web_config_file,
                  "TLS and basic-auth configuration (Prometheus exporter-toolkit format)");
  o->staleness =
      app->add_option(
             "--health-staleness-ms", o->exp.staleness_ms,
             "/health fails when the last device read is older than this or still running after it")
          ->capture_default_str()
          ->check(CLI::Range(1, 3'600'000));
  app->add_option("--max-connections", o->exp.max_connections,
                  "Connections served at once; at the limit a connection that has not passed a "
                  "request, else the one idle the longest, makes room (each idle TLS connection "
                  "holds about 15 KiB)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app->add_option("--max-connections-per-peer", o->exp.max_connections_per_peer,
                  "Connections from one client address; more are closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app->add_option("--live-interval-ms", o->exp.live_interval_ms,
                  "The live views' cadence (/ui, /api/v1/stream): one read per interval for all "
                  "viewers")
      ->capture_default_str()
      ->check(CLI::Range(100, 60'000));
  app->add_option("--max-viewers", o->exp.max_viewers,
                  "Live-view streams served at once; more are refused (503)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10'000));
  AddProcfsOption(*app, o->procfs_root);
  app->add_option("--kmsg", o->kmsg,
                  "Read Xid and SXid lines from this kernel log: /dev/kmsg, or a file of records "
                  "in its format; \"none\" reads none (default: /dev/kmsg, none with --simulate)")
      ->type_name("PATH");
  app->add_flag("--slurm-jobs", o->exp.slurm_jobs,
                "Label series with hpc_job: the Slurm jobs whose processes use the GPU or MIG "
                "instance, from their cgroups (needs the host's /proc: --procfs-root)");
  app->add_option("--kubelet-refresh-ms", o->kubelet_refresh_ms,
                  "With -k: ask the kubelet for its pods this often (and on SIGHUP), never on a "
                  "scrape")
      ->capture_default_str()
      ->check(CLI::Range(100, 3'600'000));
  if (agent) {
    AddAgentKubernetesFlags(*app, *o);
    app->add_option("--hpc-job-mapping-dir", o->dcgm.hpc_job_mapping_dir,
                    "Label series with hpc_job from the files a Slurm prolog writes in DIR (one "
                    "per GPU index or gpu.gi MIG instance, a job id per line), read at every "
                    "device read; not with --slurm-jobs")
        ->type_name("DIR");
  }
  app->add_flag("--once", o->once, "Print one /metrics exposition to stdout and exit (no server)");
  app->add_flag(
      "--print-counters", o->print_counters,
      "Print the counters in use (the -f file after checking it, or the built-in set) and exit");
  if (!agent) AddDcgmExporterFlags(*app, o->dcgm);
  return {app, [o] { return Run(*o); }};
}

}  // namespace

Subcommand SetupExporter(CLI::App& parent) { return SetupServe(parent, false); }
Subcommand SetupAgent(CLI::App& parent) { return SetupServe(parent, true); }

}  // namespace gpulse::cli
