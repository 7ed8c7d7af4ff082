// `gpulse group`: the agent's groups, like `dcgmi group` (-l, -c NAME, -g ID -a/-r ENTITIES, -i,
// -d ID), in dcgmi's table shapes or --json. Needs a running agent (docs/agent.md).
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

struct GroupOptions {
  std::string host;
  bool list = false;
  std::string create;
  std::optional<int> group;
  std::optional<int> remove_group;
  std::string add, remove;
  bool info = false;
  OutputFormat out;
};

std::string Entities(const json& g) {
  std::string out;
  for (const json& e : g["entities"]) out += (out.empty() ? "" : ", ") + e.value("label", "");
  for (const json& m : g["missing_entities"])
    out += (out.empty() ? "" : ", ") + m.get<std::string>() + " (not here)";
  return out.empty() ? "None" : out;
}

void GroupRows(DcgmiBox& box, const json& g, const std::string& indent) {
  box.Row(indent + "-> Group ID", std::to_string(g.value("id", 0)));
  box.Row(indent + "-> Group Name", g.value("name", ""));
  box.Row(indent + "-> Entities", Entities(g));
}

int Fail(const std::string& what) {
  fmt::print(stderr, "gpulse group: {}\n", what);
  return kExitFailure;
}

// One call; prints the error and returns nullopt unless the status is `want`.
std::optional<json> Call(const GroupOptions& o, const std::string& method, const std::string& path,
                         const json& body, int want, int* code) {
  std::string host = ResolveAgentHost(o.host);
  auto r = CallAgent(host, method, path, body.is_null() ? "" : body.dump());
  if (!r) {
    *code = Fail(r.error().message);
    return std::nullopt;
  }
  if (r->status != want) {
    fmt::print(stderr, "gpulse group: {}\n", ReplyError(*r));
    *code = r->status == 400 || r->status == 404 ? kExitUsage : kExitFailure;
    return std::nullopt;
  }
  return r->json;
}

int Run(const GroupOptions& o) {
  int code = kExitOk;
  int actions = o.list + !o.create.empty() + o.remove_group.has_value() + !o.add.empty() +
                !o.remove.empty() + o.info;
  if (actions != 1) {
    fmt::print(
        stderr,
        "gpulse group: give one of -l, -c NAME, -d ID, -g ID -a LIST, -g ID -r LIST, -g ID -i\n");
    return kExitUsage;
  }
  if ((!o.add.empty() || !o.remove.empty() || o.info) && !o.group) {
    fmt::print(stderr, "gpulse group: -a, -r and -i need -g ID\n");
    return kExitUsage;
  }
  if (o.list) {
    auto j = Call(o, "GET", "/api/v1/groups", nullptr, 200, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"groups"}), kExitOk;
    std::vector<json> user;
    for (const json& g : (*j)["groups"]) {
      if (!g.value("default", false)) user.push_back(g);
    }
    DcgmiBox box;
    box.Title("GROUPS");
    box.Title(fmt::format("{} group{} found.", user.size(), user.size() == 1 ? "" : "s"));
    if (!user.empty()) box.Row("Groups", "");
    for (const json& g : user) {
      box.Row("-> " + std::to_string(g.value("id", 0)), "");
      GroupRows(box, g, "   ");
    }
    fmt::print("{}", box.Render());
    return kExitOk;
  }
  if (!o.create.empty()) {
    auto j = Call(o, "POST", "/api/v1/groups", {{"name", o.create}}, 201, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"groups"}), kExitOk;
    fmt::print("Successfully created group \"{}\" with a group ID of {}\n", o.create,
               (*j)["id"].get<int>());
    return kExitOk;
  }
  if (o.remove_group) {
    auto j =
        Call(o, "DELETE", "/api/v1/groups/" + std::to_string(*o.remove_group), nullptr, 200, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"groups"}), kExitOk;
    fmt::print("Successfully removed group {}\n", *o.remove_group);
    return kExitOk;
  }
  const std::string path = "/api/v1/groups/" + std::to_string(*o.group);
  if (o.info) {
    auto j = Call(o, "GET", path, nullptr, 200, &code);
    if (!j) return code;
    if (o.out.machine()) return PrintAnswer(o.out, *j, {"groups"}), kExitOk;
    DcgmiBox box;
    box.Title("GROUP INFO");
    box.Row(std::to_string(*o.group), "");
    GroupRows(box, *j, "");
    fmt::print("{}", box.Render());
    return kExitOk;
  }
  const bool adding = !o.add.empty();
  json list = SplitNonEmpty(adding ? o.add : o.remove, ',');
  auto j = Call(o, "POST", path + "/entities", {{adding ? "add" : "remove", list}}, 200, &code);
  if (!j) return code;
  if (o.out.machine()) return PrintAnswer(o.out, *j, {"groups"}), kExitOk;
  fmt::print("{} operation successful.\n", adding ? "Add to group" : "Remove from group");
  return kExitOk;
}

}  // namespace

Subcommand SetupGroup(CLI::App& parent) {
  auto o = std::make_shared<GroupOptions>();
  CLI::App* app = parent.add_subcommand(
      "group", "The agent's groups of GPUs, like dcgmi group (see docs/agent.md)");
  AddHostOption(*app, o->host);
  app->add_flag("-l,--list", o->list, "List the groups");
  app->add_option("-c,--create", o->create, "Create a group with this name");
  app->add_option("-d,--delete", o->remove_group, "Delete the group with this ID");
  app->add_option("-g,--group", o->group, "The group to change or show");
  app->add_option(
      "-a,--add", o->add,
      "Add entities: GPU indices, GPU-/MIG- UUIDs, gpu:gi or gpu:gi:ci, comma-separated");
  app->add_option("-r,--remove", o->remove, "Remove entities (as -a)");
  app->add_flag("-i,--info", o->info, "Show the group");
  AddFormatOptions(*app, o->out, "the agent's answer, docs/schema/", "--json");
  return {app, [o] { return Run(*o); }};
}

}  // namespace gpulse::cli
