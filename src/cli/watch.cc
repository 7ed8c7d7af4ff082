// `gpulse watch`: the agent's field watches (DCGM's updateFreq and maxKeepAge): add one on a
// group, list them with what their history holds and may hold, remove one. docs/agent.md.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli/agent_client.h"
#include "cli/output_format.h"
#include "cli/subcommand.h"

namespace gpulse::cli {
namespace {

using nlohmann::json;

struct WatchOptions {
  std::string host;
  std::optional<int> group;
  std::string fields;
  std::int64_t update_ms = 1000;
  std::int64_t keep_age_s = 3600;
  bool list = false;
  std::optional<int> remove;
  OutputFormat out;
};

std::string Bytes(std::uint64_t b) {
  if (b >= (1u << 30)) return fmt::format("{:.1f} GiB", b / 1073741824.0);
  if (b >= (1u << 20)) return fmt::format("{:.1f} MiB", b / 1048576.0);
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

std::string FieldNames(const json& w) {
  std::string out;
  for (const json& f : w["fields"])
    out += (out.empty() ? "" : ",") + std::to_string(f.value("id", 0));
  return out;
}

int Report(const AgentReply& r) {
  fmt::print(stderr, "gpulse watch: {}\n", ReplyError(r));
  return r.status == 400 || r.status == 404 || r.status == 409 ? kExitUsage : kExitFailure;
}

int Run(const WatchOptions& o) {
  int actions = o.list + o.remove.has_value() + !o.fields.empty();
  if (actions != 1) {
    fmt::print(stderr,
               "gpulse watch: give one of -e FIELDS (with -g, -i, --keep-age), -l or -d ID\n");
    return kExitUsage;
  }
  std::string host = ResolveAgentHost(o.host);
  Result<AgentReply> r = Error{ErrorCode::kInternal, ""};
  if (o.list) {
    r = CallAgent(host, "GET", "/api/v1/watches");
  } else if (o.remove) {
    r = CallAgent(host, "DELETE", "/api/v1/watches/" + std::to_string(*o.remove));
  } else {
    json body{{"group", o.group.value_or(0)},
              {"fields", o.fields},
              {"update_ms", o.update_ms},
              {"keep_age_s", o.keep_age_s}};
    r = CallAgent(host, "POST", "/api/v1/watches", body.dump());
  }
  if (!r) {
    fmt::print(stderr, "gpulse watch: {}\n", r.error().message);
    return kExitFailure;
  }
  if (r->status != 200 && r->status != 201) return Report(*r);
  if (o.out.machine()) return PrintAnswer(o.out, r->json, {"watches"}), kExitOk;
  const json& j = r->json;
  if (o.remove) return fmt::print("Removed watch {}\n", *o.remove), kExitOk;
  if (!o.list) {
    fmt::print("Watch {} on group {}: fields {} every {} ms, kept {} s (history bound {})\n",
               j["id"].get<int>(), j["group"].get<int>(), FieldNames(j),
               j["update_ms"].get<std::int64_t>(), j["keep_age_s"].get<std::int64_t>(),
               Bytes(j["bound_bytes"].get<std::uint64_t>()));
    return kExitOk;
  }
  fmt::print("{:>5} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10}  {}\n", "ID", "GROUP", "UPDATE_MS",
             "KEEP_S", "POINTS", "BYTES", "BOUND", "FIELDS");
  for (const json& w : j["watches"]) {
    fmt::print("{:>5} {:>6} {:>9} {:>9} {:>10} {:>10} {:>10}  {}\n", w["id"].get<int>(),
               w["group"].get<int>(), w["update_ms"].get<std::int64_t>(),
               w["keep_age_s"].get<std::int64_t>(), w["points"].get<std::uint64_t>(),
               Bytes(w["bytes"].get<std::uint64_t>()), Bytes(w["bound_bytes"].get<std::uint64_t>()),
               FieldNames(w));
  }
  const json& h = j["history"];
  fmt::print("history: {} in {} points; bound {} of a {} limit\n",
             Bytes(h["bytes"].get<std::uint64_t>()), h["points"].get<std::uint64_t>(),
             Bytes(h["bound_bytes"].get<std::uint64_t>()),
             Bytes(h["limit_bytes"].get<std::uint64_t>()));
  return kExitOk;
}

}  // namespace

Subcommand SetupWatch(CLI::App& parent) {
  auto o = std::make_shared<WatchOptions>();
  CLI::App* app = parent.add_subcommand(
      "watch", "The agent's field watches: sample fields on its clock and keep their history");
  AddHostOption(*app, o->host);
  app->add_option("-g,--group", o->group, "The group to watch (default: 0, every GPU)");
  app->add_option(
      "-e,--fields", o->fields,
      "Fields to watch: DCGM ids or names, comma-separated, or all (the whole catalogue)");
  app->add_option("-i,--interval", o->update_ms,
                  "Update interval in milliseconds (DCGM's updateFreq)")
      ->capture_default_str()
      ->check(CLI::Range(10, 3'600'000));
  app->add_option("--keep-age", o->keep_age_s, "Seconds of history kept (DCGM's maxKeepAge)")
      ->capture_default_str()
      ->check(CLI::Range(1, 30 * 86'400));
  app->add_flag("-l,--list", o->list, "List the watches, their history and its bound");
  app->add_option("-d,--delete", o->remove, "Remove the watch with this ID (and its history)");
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
