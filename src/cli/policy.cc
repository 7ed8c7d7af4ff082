// `gpulse policy`: the agent's policies, like `dcgmi policy` (-g G --set ACTION,VALIDATION with
// -T/-P/-M/-e/-p/-n/-x, --get, --clear, --reg), in dcgmi's shapes or --json (docs/health.md).
// --reg listens on the agent's violation stream and prints each violation once as it happens.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/agent_client.h"
#include "cli/dcgmi_box.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"
#include "core/split.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct PolicyOptions {
  std::string host;
  int group = 0;
  std::string set;  // "ACTION,VALIDATION"
  std::optional<double> max_temp, max_power;
  std::optional<std::int64_t> max_pages;
  bool dbe = false, pcie = false, nvlink = false, xid = false;
  std::optional<std::string> actions;  // -a: the recommended-action condition ("any" or a list)
  std::optional<std::int64_t> update_ms;
  bool get = false, clear = false, reg = false;
  OutputFormat out;
  std::optional<std::int64_t> count;  // --reg: stop after this many violations
};

int Usage(const std::string& why) {
  fmt::print(stderr, "gpulse policy: {}\n", why);
  return kExitUsage;
}

std::string Joined(const json& names) {
  std::string out;
  for (const json& n : names) out += (out.empty() ? "" : ",") + n.get<std::string>();
  return out;
}

std::string ConditionsText(const json& p) {
  std::string out;
  for (const json& c : p["conditions"]) {
    std::string k = c.get<std::string>(), text;
    if (k == "thermal")
      text = fmt::format("Max temperature threshold - {}", p["max_temp_c"].dump());
    else if (k == "power")
      text = fmt::format("Max power threshold - {}", p["max_power_w"].dump());
    else if (k == "max_pages")
      text = fmt::format("Max retired pages threshold - {}", p["max_pages"].dump());
    else if (k == "dbe")
      text = "Double-bit ECC errors";
    else if (k == "pcie")
      text = "PCIe replay errors";
    else if (k == "nvlink")
      text = "NVLink errors";
    else if (k == "xid")
      text = "XID errors";
    else if (k == "action")
      text = p.contains("actions") ? "Recommended action - " + Joined(p["actions"])
                                   : std::string("Recommended action - any");
    out += (out.empty() ? "" : ", ") + text;
  }
  return out;
}

int Get(const PolicyOptions& o) {
  int code = kExitOk;
  auto j = CallForVerb("policy", o.host, "GET", fmt::format("/api/v1/policy?group={}", o.group),
                       nullptr, 200, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"policy"}), kExitOk;
  const json& p = (*j)["policy"];
  fmt::print("Policy information\n");
  DcgmiBox box(27);
  box.Title(fmt::format("Policy Information | group {}", o.group));
  box.Row("Violation conditions", ConditionsText(p));
  box.Row("Isolation mode", "Manual");
  box.Row("Action on violation", p["action"] == 1 ? "Reset GPU" : "None");
  box.Row("Validation after action", p["validation"] == 1 ? "System Validation (short)" : "None");
  box.Row("Validation failure action", "None");
  box.Row("Update interval (ms)", std::to_string(p["update_ms"].get<std::int64_t>()));
  fmt::print("{}", box.Render());
  return kExitOk;
}

int Set(const PolicyOptions& o) {
  auto parts = SplitNonEmpty(o.set, ',');
  if (parts.size() != 2 || (parts[0] != "0" && parts[0] != "1") || parts[1].size() != 1 ||
      parts[1][0] < '0' || parts[1][0] > '3') {
    return Usage(
        "--set takes ACTION,VALIDATION: action 0 (none) or 1 (GPU reset), validation "
        "0 to 3, e.g. 0,0");
  }
  json conditions = json::array();
  if (o.dbe) conditions.push_back("dbe");
  if (o.pcie) conditions.push_back("pcie");
  if (o.max_pages) conditions.push_back("max_pages");
  if (o.max_temp) conditions.push_back("thermal");
  if (o.max_power) conditions.push_back("power");
  if (o.nvlink) conditions.push_back("nvlink");
  if (o.xid) conditions.push_back("xid");
  if (o.actions) conditions.push_back("action");
  if (conditions.empty()) return Usage("--set needs conditions: -T, -P, -M, -e, -p, -n, -x or -a");
  json body = {{"group", o.group},
               {"conditions", conditions},
               {"action", std::stoi(parts[0])},
               {"validation", std::stoi(parts[1])}};
  if (o.max_temp) body["max_temp_c"] = *o.max_temp;
  if (o.max_power) body["max_power_w"] = *o.max_power;
  if (o.max_pages) body["max_pages"] = *o.max_pages;
  if (o.update_ms) body["update_ms"] = *o.update_ms;
  if (o.actions && *o.actions != "any") {
    auto names = SplitNonEmpty(*o.actions, ',');
    if (names.empty()) return Usage("-a takes action names (RESET_GPU,RESTART_BM) or \"any\"");
    body["actions"] = names;
  }
  int code = kExitOk;
  auto j = CallForVerb("policy", o.host, "POST", "/api/v1/policy", body, 201, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"policy"}), kExitOk;
  fmt::print("Policy successfully set.\n");
  return kExitOk;
}

// One violation as --reg prints it: dcgmi's "Timestamp:" line, then the message.
// One violation as it arrives: a JSON line, or text.
void PrintViolation(const json& v, const OutputFormat& out) {
  if (out.json()) {
    fmt::print("{}\n", v.dump(-1, ' ', false, json::error_handler_t::replace));
  } else {
    fmt::print("Timestamp: {}\nGPU {}: {}\n", v.value("time", ""), v.value("gpu", 0),
               v.value("message", ""));
    if (v.contains("action")) fmt::print("  action: {}\n", v["action"].dump());
  }
  std::fflush(stdout);
}

int Listen(const PolicyOptions& o) {
  auto stream = OpenAgentStream(ResolveAgentHost(o.host),
                                fmt::format("/api/v1/policy/stream?group={}", o.group));
  if (!stream) {
    fmt::print(stderr, "gpulse policy: {}\n", stream.error().message);
    return kExitFailure;
  }
  if (!o.out.machine()) fmt::print("Listening for violations.\n");
  std::fflush(stdout);
  std::string buffer;
  std::int64_t seen = 0;
  for (;;) {
    auto got = (*stream)->Read(buffer, std::chrono::milliseconds(1000));
    if (!got) {
      fmt::print(stderr, "gpulse policy: the agent closed the violation stream: {}\n",
                 got.error().message);
      return kExitFailure;
    }
    for (std::size_t end; (end = buffer.find("\n\n")) != std::string::npos;) {
      std::string event = buffer.substr(0, end);
      buffer.erase(0, end + 2);
      for (const std::string& line : SplitNonEmpty(event, '\n')) {
        if (line.rfind("data: ", 0) != 0) continue;
        json v = json::parse(line.substr(6), nullptr, false);
        if (v.is_discarded()) continue;
        PrintViolation(v, o.out);
        if (o.count && ++seen >= *o.count) return kExitOk;
      }
    }
  }
}

int Run(const PolicyOptions& o) {
  int actions = !o.set.empty() + o.get + o.clear + o.reg;
  if (actions != 1) return Usage("give one of --set ACTION,VALIDATION, --get, --clear, --reg");
  const bool conditions = o.max_temp || o.max_power || o.max_pages || o.dbe || o.pcie || o.nvlink ||
                          o.xid || o.actions || o.update_ms;
  if (conditions && o.set.empty()) {
    return Usage("-T, -P, -M, -e, -p, -n, -x, -a and -u go with --set");
  }
  if (o.count && !o.reg) return Usage("--count goes with --reg");
  if (o.reg && o.out.csv()) return Usage("--reg streams violations as text or JSON lines, not csv");
  if (o.get) return Get(o);
  if (o.reg) return Listen(o);
  if (!o.set.empty()) return Set(o);
  int code = kExitOk;
  auto j = CallForVerb("policy", o.host, "DELETE", fmt::format("/api/v1/policy?group={}", o.group),
                       nullptr, 200, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"policy"}), kExitOk;
  fmt::print("Policy successfully cleared.\n");
  return kExitOk;
}

}  // namespace

Subcommand SetupPolicy(CLI::App& parent) {
  auto o = std::make_shared<PolicyOptions>();
  CLI::App* app = parent.add_subcommand(
      "policy", "The agent's policies and their violations, like dcgmi policy (docs/health.md)");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group (default 0: every GPU)")
      ->check(CLI::Range(0, 0x7fffffff));
  app->add_option("--set", o->set,
                  "Set the policy: ACTION,VALIDATION (action 0 none, 1 GPU reset; validation 0 "
                  "none, 1 short = level-1 diagnostics)");
  app->add_option("-T,--maxtemp", o->max_temp, "Condition: temperature above this (°C)")
      ->check(CLI::Range(1.0, 200.0));
  app->add_option("-P,--maxpower", o->max_power, "Condition: power above this (W)")
      ->check(CLI::Range(1.0, 100000.0));
  app->add_option("-M,--maxpages", o->max_pages, "Condition: retired pages reaching this")
      ->check(CLI::Range(1, 1'000'000));
  app->add_flag("-e,--eccerrors", o->dbe, "Condition: double-bit ECC errors");
  app->add_flag("-p,--pcierrors", o->pcie, "Condition: PCIe replay errors");
  app->add_flag("-n,--nvlinkerrors", o->nvlink, "Condition: NVLink errors");
  app->add_flag("-x,--xiderrors", o->xid, "Condition: XID errors");
  app->add_option("-a,--recommended-action", o->actions,
                  "Condition (gpulse's): the GPU's recommended action becomes one of ACTIONS "
                  "(comma-separated, e.g. RESET_GPU,RESTART_BM; \"any\": every one; "
                  "docs/faults.md)")
      ->type_name("ACTIONS");
  app->add_option("-u,--update-interval", o->update_ms, "With --set: ms between reads (1000)")
      ->check(CLI::Range(100, 3'600'000));
  app->add_flag("--get", o->get, "Show the group's policy");
  app->add_flag("--clear", o->clear, "Remove the group's policy");
  app->add_flag("--reg", o->reg, "Listen for violations and print each as it happens");
  app->add_option("--count", o->count, "With --reg: exit after this many violations")
      ->check(CLI::Range(1, 1'000'000'000));
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "-j,--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
