// `gpulse config`: the agent's configuration targets, like `dcgmi config` (-g G --get [-v],
// --set -c MODE -e 0/1 -s 0/1 -a MEM,SM -P WATTS, --enforce), in dcgmi's Field/Target/Current
// table or --json (docs/health.md). The agent checks every set against each GPU's allowed range
// first and applies the targets again after a GPU reset and when it restarts.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/agent_client.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"
#include "core/split.h"
#include "health/config_target.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct ConfigOptions {
  std::string host;
  int group = 0;
  bool get = false, verbose = false, set = false, enforce = false;
  OutputFormat out;
  std::optional<int> compute_mode, ecc, sync_boost;
  std::string app_clocks;  // "MEM,SM"
  std::optional<double> power_limit;
};

// `-c` takes dcgmi's numbers (DCGM's dcgmConfigComputeMode: 0 Unrestricted, 1 Prohibited, 2
// Exclusive Process); the agent's API takes NVML's nvmlComputeMode_t (0, 2, 3: docs/health.md).
constexpr int kNvmlModeOfDcgmi[] = {0, 2, 3};

int Usage(const std::string& why) {
  fmt::print(stderr, "gpulse config: {}\n", why);
  return kExitUsage;
}

std::string ModeName(const json& v) {
  if (v.is_null()) return "";
  std::string name = health::ComputeModeName(v.get<int>());
  return name.empty() ? v.dump() : name;
}

// How one setting prints: its target ("Not Specified" when none) or current ("Not Supported").
std::string Shown(const std::string& setting, const json& v, bool target) {
  if (v.is_null()) return target ? "Not Specified" : "Not Supported";
  if (setting == "compute_mode") return ModeName(v);
  if (setting == "ecc") return v.get<bool>() ? "Enabled" : "Disabled";
  if (v.is_number_float()) return fmt::format("{:g}", v.get<double>());
  return v.dump();
}

struct Row {
  const char* key;
  const char* label;
};
constexpr Row kRows[] = {{"compute_mode", "Compute Mode"},
                         {"ecc", "ECC Mode"},
                         {"sync_boost", "Sync Boost"},
                         {"app_mem_clock_mhz", "Memory Application Clock"},
                         {"app_sm_clock_mhz", "SM Application Clock"},
                         {"power_limit_w", "Power Limit"}};

void Table(const std::string& title, const std::string& subtitle,
           const std::vector<std::array<std::string, 3>>& rows) {
  const std::string rule =
      "+" + std::string(30, '-') + "+" + std::string(30, '-') + "+" + std::string(30, '-') + "+\n";
  const std::string dbl =
      "+" + std::string(30, '=') + "+" + std::string(30, '=') + "+" + std::string(30, '=') + "+\n";
  std::string out = rule;
  out += fmt::format("| {:<90} |\n", title);
  out += fmt::format("| {:<90} |\n", subtitle);
  out += dbl;
  out += fmt::format("| {:<28} | {:<28} | {:<28} |\n", "Field", "Target", "Current");
  out += rule;
  for (const auto& r : rows) out += fmt::format("| {:<28} | {:<28} | {:<28} |\n", r[0], r[1], r[2]);
  out += rule;
  fmt::print("{}", out);
}

// The settings of one GPU as (key -> [target, current]).
std::map<std::string, std::pair<json, json>> Settings(const json& gpu) {
  std::map<std::string, std::pair<json, json>> out;
  for (const json& s : gpu["settings"]) out[s["setting"]] = {s["target"], s["current"]};
  return out;
}

int Get(const ConfigOptions& o) {
  int code = kExitOk;
  auto j = CallForVerb("config", o.host, "GET", fmt::format("/api/v1/config?group={}", o.group),
                       nullptr, 200, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
  auto g = CallForVerb("config", o.host, "GET", fmt::format("/api/v1/groups/{}", o.group), nullptr,
                       200, &code);
  if (!g) return code;
  const json& gpus = (*j)["gpus"];
  const std::string name = g->value("name", "");
  if (o.verbose) {
    for (const json& gpu : gpus) {
      auto s = Settings(gpu);
      std::vector<std::array<std::string, 3>> rows;
      for (const Row& r : kRows) {
        rows.push_back(
            {r.label, Shown(r.key, s[r.key].first, true), Shown(r.key, s[r.key].second, false)});
      }
      Table(fmt::format("GPU ID: {}", gpu["gpu"].get<int>()), gpu.value("name", ""), rows);
    }
    return kExitOk;
  }
  // The group: one value where every GPU agrees, "****" where they differ (as dcgmi shows it).
  std::vector<std::array<std::string, 3>> rows;
  for (const Row& r : kRows) {
    std::optional<std::string> target, current;
    for (const json& gpu : gpus) {
      auto s = Settings(gpu);
      std::string t = Shown(r.key, s[r.key].first, true), c = Shown(r.key, s[r.key].second, false);
      target = !target || *target == t ? t : "****";
      current = !current || *current == c ? c : "****";
    }
    rows.push_back({r.label, target.value_or("Not Specified"), current.value_or("Not Supported")});
  }
  Table(name, fmt::format("Group of {} GPUs", gpus.size()), rows);
  return kExitOk;
}

int Set(const ConfigOptions& o) {
  json body = {{"group", o.group}};
  if (o.compute_mode) body["compute_mode"] = kNvmlModeOfDcgmi[*o.compute_mode];
  if (o.ecc) body["ecc"] = *o.ecc == 1;
  if (o.sync_boost) body["sync_boost"] = *o.sync_boost == 1;
  if (o.power_limit) body["power_limit_w"] = *o.power_limit;
  if (!o.app_clocks.empty()) {
    auto parts = SplitNonEmpty(o.app_clocks, ',');
    unsigned mem = 0, sm = 0;
    if (parts.size() != 2 || std::sscanf(parts[0].c_str(), "%u", &mem) != 1 ||
        std::sscanf(parts[1].c_str(), "%u", &sm) != 1) {
      return Usage("-a takes MEM,SM application clocks in MHz, e.g. 2619,1980");
    }
    body["app_clocks"] = {{"mem_mhz", mem}, {"sm_mhz", sm}};
  }
  if (body.size() == 1) return Usage("--set needs a setting: -c, -e, -s, -a or -P");
  int code = kExitOk;
  auto j = CallForVerb("config", o.host, "POST", "/api/v1/config", body, 201, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
  fmt::print("Configuration successfully set.\n");
  return kExitOk;
}

int Run(const ConfigOptions& o) {
  if (o.get + o.set + o.enforce != 1) return Usage("give one of --get, --set, --enforce");
  const bool settings =
      o.compute_mode || o.ecc || o.sync_boost || o.power_limit || !o.app_clocks.empty();
  if (settings && !o.set) return Usage("-c, -e, -s, -a and -P go with --set");
  if (o.verbose && !o.get) return Usage("-v goes with --get");
  if (o.get) return Get(o);
  if (o.set) return Set(o);
  int code = kExitOk;
  auto j = CallForVerb("config", o.host, "POST", "/api/v1/config/enforce", {{"group", o.group}},
                       200, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
  fmt::print("Configuration successfully enforced.\n");
  return kExitOk;
}

}  // namespace

Subcommand SetupConfig(CLI::App& parent) {
  auto o = std::make_shared<ConfigOptions>();
  CLI::App* app = parent.add_subcommand(
      "config", "The agent's configuration targets, like dcgmi config (docs/health.md)");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group (default 0: every GPU)")
      ->check(CLI::Range(0, 0x7fffffff));
  app->add_flag("--get", o->get, "Show target and current settings");
  app->add_flag("-v,--verbose", o->verbose, "With --get: one table per GPU");
  app->add_flag("--set", o->set, "Set targets (checked against each GPU's range first)");
  app->add_flag("--enforce", o->enforce, "Apply the targets again now");
  app->add_option("-c,--compmode", o->compute_mode,
                  "Compute mode, numbered as dcgmi's: 0 Unrestricted, 1 Prohibited, 2 Exclusive "
                  "Process")
      ->check(CLI::Range(0, 2));
  app->add_option("-e,--eccmode", o->ecc, "ECC mode 0/1 (applies at the next reset)")
      ->check(CLI::Range(0, 1));
  app->add_option("-s,--syncboost", o->sync_boost, "Sync boost 0/1 (not supported: refused)")
      ->check(CLI::Range(0, 1));
  app->add_option("-a,--appclocks", o->app_clocks, "Application clocks MEM,SM in MHz");
  app->add_option("-P,--powerlimit", o->power_limit, "Power limit in watts")
      ->check(CLI::Range(1.0, 100000.0));
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "-j,--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
