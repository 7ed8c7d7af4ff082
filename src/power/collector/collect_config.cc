#include "power/collector/collect_config.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "power/collector/exporter_launch.h"
#include "power/readers/contract.h"
#include "sys/regular_file.h"
#include "sys/strict_yaml.h"

namespace gpulse::power {
namespace {

// Errors inside this file travel as this exception and leave ParseCollectConfig as a value.
struct ConfigError {
  std::string message;
};

[[noreturn]] void Fail(std::string msg) { throw ConfigError{std::move(msg)}; }

void RejectUnknownKeys(const YAML::Node& map, const std::string& where,
                       const std::set<std::string>& known) {
  if (!map.IsMap()) Fail(where + " must be a mapping");
  for (const auto& kv : map) {
    auto key = kv.first.as<std::string>();
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      Fail(fmt::format("unknown key {}{} (known keys: {})", where.empty() ? "" : where + ".", key,
                       list));
    }
  }
}

template <typename T>
T Scalar(const YAML::Node& n, const std::string& key, const char* what) {
  if (!n.IsScalar()) Fail(key + " must be " + what);
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    Fail(key + " must be " + what + ", got \"" + n.Scalar() + "\"");
  }
}

// At most a day: no collector waits longer, and beyond about 1e16 s the derived join timeout
// (2 * (2 * request timeout + 1) + 2) rounds to the cycle bound it must exceed (found by fuzzing,
// issue 13).
constexpr double kMaxSeconds = 86'400;

double Seconds(const YAML::Node& parent, const std::string& prefix, const char* key, double def) {
  const YAML::Node n = parent[key];
  if (!n) return def;
  std::string name = prefix + key;
  double v = Scalar<double>(n, name, "a number");
  if (!std::isfinite(v) || v <= 0 || v > kMaxSeconds)
    Fail("telemetry." + std::string(key) + " must be finite, positive and at most 86400 (a day)");
  return v;
}

bool Bool(const YAML::Node& parent, const std::string& name, const char* key, bool def) {
  const YAML::Node n = parent[key];
  if (!n) return def;
  return Scalar<bool>(n, name, "true or false");
}

int64_t NonNegativeInt(const YAML::Node& n, const std::string& name) {
  auto v = Scalar<int64_t>(n, name, "a non-negative integer");
  if (v < 0) Fail(name + " must be a non-negative integer, got " + std::to_string(v));
  return v;
}

std::string NonEmpty(const YAML::Node& n, const std::string& name) {
  if (!n) Fail(name + " is required");
  auto v = Scalar<std::string>(n, name, "a non-empty string");
  if (v.empty()) Fail(name + " must be a non-empty string");
  return v;
}

uint16_t Port(const YAML::Node& n, const std::string& name) {
  auto v = Scalar<int64_t>(n, name, "an integer in 1..65535");
  if (v < 1 || v > 65535) Fail(name + " must be in 1..65535");
  return static_cast<uint16_t>(v);
}

void ParseTelemetry(const YAML::Node& t, CollectConfig& c) {
  RejectUnknownKeys(t, "telemetry",
                    {"enabled", "collect_interval_ms", "storage_subdir", "required",
                     "startup_timeout_seconds", "request_timeout_seconds",
                     "collector_join_timeout_seconds", "clock_sync_check", "dcgm_exporter"});
  c.enabled = Bool(t, "telemetry.enabled", "enabled", false);
  if (t["collect_interval_ms"]) {
    auto ms = Scalar<double>(t["collect_interval_ms"], "telemetry.collect_interval_ms", "a number");
    if (!std::isfinite(ms) || ms <= 0)
      Fail("telemetry.collect_interval_ms must be finite and positive");
    if (ms > kMaxSampleIntervalSeconds * 1000)
      Fail(fmt::format(
          "telemetry.collect_interval_ms={} exceeds the 3000 ms max sample gap the power validator "
          "accepts; every window would fail sample_gap_exceeded. Set it to the intended collector "
          "period (e.g. 1000).",
          ms));
    c.interval_s = ms / 1000.0;
  }
  if (t["storage_subdir"]) {
    c.storage_subdir =
        Scalar<std::string>(t["storage_subdir"], "telemetry.storage_subdir", "a path");
    if (!IsSafeRelativeSubpath(c.storage_subdir))
      Fail("telemetry.storage_subdir must be a safe relative path below the run log directory");
  }
  c.required = Bool(t, "telemetry.required", "required", false);
  c.clock_sync_check = Bool(t, "telemetry.clock_sync_check", "clock_sync_check", true);
  c.startup_timeout_s = Seconds(t, "telemetry.", "startup_timeout_seconds", 30);
  c.request_timeout_s = Seconds(t, "telemetry.", "request_timeout_seconds", 2);
  double worst = 2 * (2 * c.request_timeout_s + 1.0);
  c.join_timeout_s = worst + 2;
  if (const YAML::Node j = t["collector_join_timeout_seconds"]) {
    auto v = Scalar<double>(j, "telemetry.collector_join_timeout_seconds", "a number");
    if (!std::isfinite(v) || v <= worst)
      Fail(fmt::format(
          "telemetry.collector_join_timeout_seconds must be finite, positive, and greater than two "
          "full collector cycles (2 * (2 * telemetry.request_timeout_seconds + 1 second) = {} s)",
          worst));
    c.join_timeout_s = v;
  }
  // The default holds for a config without the section too (telemetry disabled): an accepted
  // config always has a command that splits into words (found by fuzz_collect_config).
  c.exporter.command = std::string(kDefaultExporterCommand);
  const YAML::Node e = t["dcgm_exporter"];
  if (!e || e.IsNull()) {
    if (c.enabled) Fail("telemetry.dcgm_exporter is required when telemetry is enabled");
    return;
  }
  RejectUnknownKeys(e, "telemetry.dcgm_exporter",
                    {"container_image", "port", "command", "launch", "srun_args"});
  if (!e["container_image"] || !e["container_image"].IsScalar() ||
      e["container_image"].Scalar().empty())
    Fail("telemetry.dcgm_exporter.container_image must be non-empty");
  c.exporter.container_image = e["container_image"].Scalar();
  if (!e["port"]) Fail("telemetry.dcgm_exporter.port must be in 1..65535");
  c.exporter.port = Port(e["port"], "telemetry.dcgm_exporter.port");
  if (e["command"]) c.exporter.command = NonEmpty(e["command"], "telemetry.dcgm_exporter.command");
  if (auto words = SplitCommand(c.exporter.command); !words.ok())
    Fail("telemetry.dcgm_exporter.command: " + words.error().message);
  if (e["launch"]) {
    auto mode = Scalar<std::string>(e["launch"], "telemetry.dcgm_exporter.launch", "a string");
    if (mode == "none")
      c.exporter.launch = LaunchMode::kNone;
    else if (mode == "local")
      c.exporter.launch = LaunchMode::kLocal;
    else if (mode == "srun")
      c.exporter.launch = LaunchMode::kSrun;
    else
      Fail("telemetry.dcgm_exporter.launch must be one of none, local, srun, got \"" + mode + "\"");
  }
  if (const YAML::Node a = e["srun_args"]) {
    if (c.exporter.launch != LaunchMode::kSrun)
      Fail("telemetry.dcgm_exporter.srun_args needs launch: srun");
    if (!a.IsSequence()) Fail("telemetry.dcgm_exporter.srun_args must be a list of strings");
    for (size_t i = 0; i < a.size(); ++i)
      c.exporter.srun_args.push_back(
          NonEmpty(a[i], fmt::format("telemetry.dcgm_exporter.srun_args[{}]", i)));
  }
}

// srun starts one command line on every node: one port, no per-node placeholder.
void CheckLaunch(const CollectConfig& c) {
  if (c.exporter.launch != LaunchMode::kSrun) return;
  if (c.exporter.command.find("{hostname}") != std::string::npos)
    Fail(
        "telemetry.dcgm_exporter.command may use {hostname} only with launch: local; srun starts "
        "the same command on every node");
  for (size_t i = 0; i < c.endpoints.size(); ++i)
    if (c.endpoints[i].port != c.exporter.port)
      Fail(
          fmt::format("endpoints[{}].port is {} but telemetry.dcgm_exporter.port is {}; with "
                      "launch: srun every node's exporter listens on telemetry.dcgm_exporter.port",
                      i, c.endpoints[i].port, c.exporter.port));
}

void ParseEndpoints(const YAML::Node& list, CollectConfig& c) {
  if (!list || !list.IsSequence() || list.size() == 0)
    Fail("endpoints must be a non-empty list of {hostname, address, port} (one per node)");
  std::set<std::string> hosts;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = fmt::format("endpoints[{}]", i);
    const YAML::Node n = list[i];
    RejectUnknownKeys(n, at, {"hostname", "address", "port", "path"});
    EndpointConfig ep;
    ep.hostname = NonEmpty(n["hostname"], at + ".hostname");
    ep.address = n["address"] ? NonEmpty(n["address"], at + ".address") : ep.hostname;
    ep.port = n["port"] ? Port(n["port"], at + ".port") : static_cast<uint16_t>(c.exporter.port);
    if (n["path"]) {
      ep.path = NonEmpty(n["path"], at + ".path");
      if (ep.path.front() != '/') Fail(at + ".path must start with '/'");
    }
    if (!hosts.insert(ep.hostname).second)
      Fail(at + ".hostname \"" + ep.hostname + "\" is listed twice; one endpoint per node");
    c.endpoints.push_back(std::move(ep));
  }
}

void ParseWorkers(const YAML::Node& list, CollectConfig& c) {
  if (!list || !list.IsSequence() || list.size() == 0)
    Fail("workers must be a non-empty list of {hostname, gpus, worker_role, worker_index, ...}");
  std::set<std::string> hosts;
  for (const auto& ep : c.endpoints) hosts.insert(ep.hostname);
  std::map<DeviceKey, size_t> index;
  std::set<std::string> used_hosts;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = fmt::format("workers[{}]", i);
    const YAML::Node n = list[i];
    RejectUnknownKeys(
        n, at, {"hostname", "gpus", "worker_role", "worker_index", "worker_process", "het_group"});
    std::string host = NonEmpty(n["hostname"], at + ".hostname");
    if (!hosts.count(host))
      Fail(at + ".hostname \"" + host + "\" has no entry in endpoints; add its exporter endpoint");
    used_hosts.insert(host);
    Assignment a;
    a.worker_role = NonEmpty(n["worker_role"], at + ".worker_role");
    if (!IsKnownRole(a.worker_role))
      Fail(at + ".worker_role must be one of prefill, decode, agg, got \"" + a.worker_role + "\"");
    if (!n["worker_index"]) Fail(at + ".worker_index is required");
    a.worker_index = NonNegativeInt(n["worker_index"], at + ".worker_index");
    // The upstream reads every assignment's worker_process as an integer >= 0 (ADR 0016).
    if (!n["worker_process"] || n["worker_process"].IsNull())
      Fail(at +
           ".worker_process is required: the worker's process rank on its node (0 for the "
           "first), an integer >= 0");
    a.worker_process = NonNegativeInt(n["worker_process"], at + ".worker_process");
    if (n["het_group"] && !n["het_group"].IsNull())
      a.het_group = NonNegativeInt(n["het_group"], at + ".het_group");
    const YAML::Node gpus = n["gpus"];
    if (!gpus || !gpus.IsSequence() || gpus.size() == 0)
      Fail(at + ".gpus must be a non-empty list of GPU indices");
    std::set<int64_t> seen;
    for (size_t g = 0; g < gpus.size(); ++g) {
      int64_t idx = NonNegativeInt(gpus[g], fmt::format("{}.gpus[{}]", at, g));
      if (!seen.insert(idx).second) Fail(fmt::format("{}.gpus lists GPU {} twice", at, idx));
      DeviceKey key{host, idx};
      auto it = index.find(key);
      if (it == index.end()) {
        index.emplace(key, c.topology.devices.size());
        c.topology.devices.push_back({key, {a}});
      } else {
        c.topology.devices[it->second].assignments.push_back(a);
      }
    }
  }
  for (const auto& ep : c.endpoints)
    if (!used_hosts.count(ep.hostname))
      Fail("endpoints: \"" + ep.hostname +
           "\" has no GPU in workers; every GPU it reports would be an unexpected_device");
  // Conflicts would make every run unpublishable: refuse them before anything starts.
  DeviceCheck check = CheckDevices(c.topology, {});
  for (const auto& [reason, detail] : check.details)
    if (reason == reason::kConflictingWorkerRoles || reason == reason::kConflictingHetGroups)
      Fail("workers: " + reason + ": " + detail);
}

void ParseBenchmark(const YAML::Node& b, CollectConfig& c) {
  if (!b) Fail("benchmark is required: {type, concurrencies} names the expected windows");
  RejectUnknownKeys(b, "benchmark", {"type", "concurrencies"});
  std::string type = NonEmpty(b["type"], "benchmark.type");
  const YAML::Node list = b["concurrencies"];
  if (!list || !list.IsSequence() || list.size() == 0)
    Fail("telemetry requires a non-empty list of unique positive benchmark.concurrencies");
  std::set<int64_t> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    auto v = Scalar<int64_t>(list[i], fmt::format("benchmark.concurrencies[{}]", i), "an integer");
    if (v <= 0 || !seen.insert(v).second)
      Fail("telemetry requires a non-empty list of unique positive benchmark.concurrencies");
    c.topology.windows.push_back({type, v});
  }
}

CollectConfig Parse(const YAML::Node& root) {
  RejectUnknownKeys(root, "",
                    {"job_id", "run_name", "telemetry", "endpoints", "workers", "benchmark"});
  CollectConfig c;
  if (!root["telemetry"]) Fail("telemetry is required (see docs/power-contract.md)");
  ParseTelemetry(root["telemetry"], c);
  c.job_id = root["job_id"] ? NonEmpty(root["job_id"], "job_id") : "";
  c.run_name = root["run_name"] ? NonEmpty(root["run_name"], "run_name") : "gpulse-collect";
  ParseEndpoints(root["endpoints"], c);
  ParseWorkers(root["workers"], c);
  ParseBenchmark(root["benchmark"], c);
  CheckLaunch(c);
  return c;
}

// A config names every endpoint and worker: 4,096 nodes of 8 GPUs (about 32,000 GPUs from one
// head node) take some 180,000 YAML nodes and 750 kB, so the collect config has higher bounds than
// the other YAML files (docs/formats.md "Limits").
constexpr yaml::Limits kConfigLimits{.max_depth = 64, .max_nodes = 1'000'000};
constexpr std::size_t kMaxConfigFileBytes = 8u << 20;

}  // namespace

Result<CollectConfig> ParseCollectConfig(std::string_view text) {
  try {
    if (auto shape = yaml::CheckShape(text, kConfigLimits)) {
      return InvalidArgument("config: line " + std::to_string(shape->line) + ": " + shape->what +
                             ": refused");
    }
    YAML::Node root = YAML::Load(std::string(text));
    if (auto dup = yaml::FindDuplicateKey(root, kConfigLimits)) {
      return InvalidArgument("config: line " + std::to_string(dup->line) + ": " +
                             yaml::Describe(*dup));
    }
    if (!root.IsMap()) return InvalidArgument("config: the top level must be a mapping");
    return Parse(root);
  } catch (const ConfigError& e) {
    return InvalidArgument("config: " + e.message);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: not valid YAML: ") + e.what());
  }
}

Result<CollectConfig> LoadCollectConfig(const std::filesystem::path& path) {
  // A regular file of at most 8 MiB, opened without blocking (a FIFO or /dev/zero is refused).
  auto text = sys::ReadRegularFile(path.string(), kMaxConfigFileBytes);
  if (!text) return Error{text.error().code, "config: cannot read: " + text.error().message};
  auto c = ParseCollectConfig(*text);
  if (!c.ok()) return InvalidArgument(path.string() + ": " + c.error().message);
  return c;
}

}  // namespace gpulse::power
