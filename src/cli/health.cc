// `gpulse health`: the agent's health watches, like `dcgmi health` (-g G --set pmitnd | --fetch |
// --check | --clear), in dcgmi's table shapes or --json (docs/health.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/agent_client.h"
#include "cli/dcgmi_box.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct HealthOptions {
  std::string host;
  int group = 0;
  std::string set;
  bool fetch = false, check = false, clear = false;
  OutputFormat out;
  std::optional<std::int64_t> update_ms, keep_age_s;
};

std::string SystemName(const std::string& key) {
  static const std::map<std::string, std::string> names = {
      {"pcie", "PCIe"},   {"memory", "Memory"}, {"inforom", "InfoROM"}, {"thermal", "Thermal"},
      {"power", "Power"}, {"nvlink", "NVLink"}, {"driver", "Driver"}};
  auto it = names.find(key);
  return it != names.end() ? it->second : key;
}

std::string ResultText(const std::string& r) {
  return r == "pass" ? "Healthy" : r == "warn" ? "Warning" : "Failure";
}

void PrintCheck(const json& j) {
  fmt::print("Health Monitor Report\n");
  DcgmiBox box(16);
  box.Title(fmt::format("Group {} | Overall Health: {}", j["group"].get<int>(),
                        j["overall_text"].get<std::string>()));
  for (const json& g : j["gpus"]) {
    box.Row(fmt::format("GPU ID: {}", g["gpu"].get<int>()),
            ResultText(g["overall"].get<std::string>()));
    for (const json& i : g["incidents"]) {
      box.Row("", fmt::format("{} system: {} - {}", SystemName(i["subsystem"]),
                              ResultText(i["result"]), i["message"].get<std::string>()));
    }
    // gpulse's: what the GPU's pending faults call for (docs/faults.md).
    const json& a = g.value("recommended_action", json());
    if (a.is_object() && a["action"] != "NONE") {
      std::string desc = a.value("description", "");
      box.Row("", fmt::format("Recommended action: {} - Xid {}{}{}", a["action"].get<std::string>(),
                              a["xid"].get<std::uint64_t>(), desc.empty() ? "" : ": ", desc));
    }
  }
  fmt::print("{}", box.Render());
}

int Run(const HealthOptions& o) {
  int actions = !o.set.empty() + o.fetch + o.check + o.clear;
  if (actions != 1) {
    fmt::print(stderr, "gpulse health: give one of --set LETTERS, --fetch, --check, --clear\n");
    return kExitUsage;
  }
  if ((o.update_ms || o.keep_age_s) && o.set.empty()) {
    fmt::print(stderr, "gpulse health: -u and -m go with --set\n");
    return kExitUsage;
  }
  int code = kExitOk;
  const std::string q = "?group=" + std::to_string(o.group);
  if (!o.set.empty()) {
    json body = {{"group", o.group}, {"systems", o.set}};
    if (o.update_ms) body["update_ms"] = *o.update_ms;
    if (o.keep_age_s) body["keep_age_s"] = *o.keep_age_s;
    auto j = CallForVerb("health", o.host, "POST", "/api/v1/health/watch", body, 201, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
    fmt::print("Health monitor systems set successfully.\n");
    return kExitOk;
  }
  if (o.clear) {
    auto j =
        CallForVerb("health", o.host, "DELETE", "/api/v1/health/watch" + q, nullptr, 200, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
    fmt::print("Health monitor systems cleared successfully.\n");
    return kExitOk;
  }
  if (o.fetch) {
    auto j = CallForVerb("health", o.host, "GET", "/api/v1/health/watch" + q, nullptr, 200, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"gpus"}), kExitOk;
    DcgmiBox box(26);
    box.Title("Health Monitor Systems Report");
    for (const char* key : {"pcie", "memory", "inforom", "thermal", "power", "nvlink", "driver"}) {
      bool on = false;
      for (const json& s : (*j)["subsystems"]) on = on || s == key;
      box.Row(SystemName(key), on ? "On" : "Off");
    }
    box.Row("Update interval (ms)", std::to_string((*j)["update_ms"].get<std::int64_t>()));
    box.Row("Max keep age (s)", std::to_string((*j)["keep_age_s"].get<std::int64_t>()));
    fmt::print("{}", box.Render());
    return kExitOk;
  }
  auto j = CallForVerb("health", o.host, "GET", "/api/v1/health" + q, nullptr, 200, &code);
  if (!j) return code;
  if (o.out.machine()) {
    PrintAnswer(o.out, *j, {"gpus"});
  } else {
    PrintCheck(*j);
  }
  // Like a test runner: a failing verdict is a failing exit, so scripts can gate on it.
  return (*j)["overall"] == "fail" ? kExitFailure : kExitOk;
}

}  // namespace

Subcommand SetupHealth(CLI::App& parent) {
  auto o = std::make_shared<HealthOptions>();
  CLI::App* app = parent.add_subcommand(
      "health", "The agent's health watches, like dcgmi health (see docs/health.md)");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group (default 0: every GPU)")
      ->check(CLI::Range(0, 0x7fffffff));
  app->add_option("-s,--set", o->set,
                  "Watch these subsystems: p PCIe, m memory, i InfoROM, t thermal and power, "
                  "n NVLink, d driver, a all (e.g. pm)");
  app->add_option("-u,--update-interval", o->update_ms, "With --set: ms between reads (1000)")
      ->check(CLI::Range(100, 3'600'000));
  app->add_option("-m,--max-keep-age", o->keep_age_s,
                  "With --set: the window counters and XIDs are judged over, s (600)")
      ->check(CLI::Range(60, 30 * 86'400));
  app->add_flag("-f,--fetch", o->fetch, "Show the watched subsystems");
  app->add_flag("-c,--check", o->check, "Check the group's health (exit 1 on a failure)");
  app->add_flag("--clear", o->clear, "Stop watching");
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "-j,--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
