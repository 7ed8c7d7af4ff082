// `gpulse exporter`: a Prometheus endpoint compatible with dcgm-exporter (same families, labels and
// units), read on scrape, with /health, a JSON API, TLS and basic auth. See docs/exporter.md.
#include "exporter/exporter.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>

#include "cli/build_info.h"
#include "cli/dcgm_exporter_flags.h"
#include "cli/gpu_options.h"
#include "cli/subcommand.h"
#include "gpu/registry.h"

namespace gpulse::cli {
namespace {

struct ExporterCliOptions {
  gpu::BackendOptions gpu;
  exporter::ExporterOptions exp;
  std::string hostname;
  bool no_hostname = false;
  bool once = false;
  bool print_counters = false;
  DcgmCompat dcgm;  // dcgm-exporter's own flags and variables
  CLI::Option* min_refresh = nullptr;
  CLI::Option* staleness = nullptr;
};

int UsageOrFailure(const Error& e) {
  fmt::print(stderr, "gpulse exporter: {}\n", e.message);
  return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound ? kExitUsage
                                                                                 : kExitFailure;
}

// dcgm-exporter's rule: $NODE_NAME (set by Kubernetes DaemonSets), else the host name.
std::optional<std::string> ChooseHostname(const ExporterCliOptions& o) {
  if (o.no_hostname) return std::nullopt;
  if (!o.hostname.empty()) return o.hostname;
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0')
    return std::string(node);
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0) return std::string(buf);
  return std::nullopt;
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

int Run(ExporterCliOptions& o) {
  if (Status s = ApplyDcgmExporterFlags(o); !s.ok()) return UsageOrFailure(s.error());
  o.exp.hostname = ChooseHostname(o);
  o.exp.version = kGpulseVersion;
  o.exp.commit = kGpulseGitCommit;
  auto counters = exporter::LoadCounterSet(o.exp);
  if (!counters) return UsageOrFailure(counters.error());
  if (o.print_counters) {
    fmt::print("{}", exporter::FormatCounters(**counters));
    return kExitOk;
  }
  auto backend = gpu::OpenBackend(o.gpu);
  if (!backend) {
    fmt::print(stderr, "gpulse exporter: {}\n", backend.error().message);
    return backend.error().code == ErrorCode::kUnavailable ? kExitFailure : kExitUsage;
  }
  if (o.once) {
    fmt::print("{}", exporter::RenderOnce(**backend, *counters, o.exp));
    return kExitOk;
  }
  auto e = exporter::Exporter::Create(o.exp, std::move(backend).value(), *counters);
  if (!e) return UsageOrFailure(e.error());
  (*e)->Run();
  return kExitOk;
}

}  // namespace

Subcommand SetupExporter(CLI::App& parent) {
  auto o = std::make_shared<ExporterCliOptions>();
  CLI::App* app = parent.add_subcommand(
      "exporter",
      "Serve GPU metrics to Prometheus, compatible with dcgm-exporter (see docs/exporter.md)");
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
                  "Connections served at once; at the limit the oldest that has not yet passed a "
                  "request makes room, else a new one is closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app->add_option("--max-connections-per-peer", o->exp.max_connections_per_peer,
                  "Connections from one client address; more are closed")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app->add_flag("--once", o->once, "Print one /metrics exposition to stdout and exit (no server)");
  app->add_flag(
      "--print-counters", o->print_counters,
      "Print the counters in use (the -f file after checking it, or the built-in set) and exit");
  AddDcgmExporterFlags(*app, o->dcgm);
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
