// Health watches and level-1 diagnostics on the agent (docs/health.md): a watch's JSON, the health
// check of a group's GPUs, the deployment checks, and their API routes. On the worker thread.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

#include "agent/agent.h"
#include "agent/api_util.h"
#include "agent/manage_util.h"
#include "health/diag.h"
#include "health/reading.h"

namespace gpulse::agent {

using nlohmann::json;

// ---- Health watches ----------------------------------------------------------------------------

Result<HealthSpec> HealthFromJson(const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "group" && k != "systems" && k != "update_ms" && k != "keep_age_s") {
      return InvalidArgument("health: unknown member '" + k + "'");
    }
  }
  HealthSpec h;
  if (!body.contains("systems") || !body["systems"].is_string()) {
    return InvalidArgument("health: 'systems' must be a string of subsystem letters (e.g. \"pm\")");
  }
  auto systems = health::ParseSubsystems(body["systems"].get<std::string>());
  if (!systems) return systems.error();
  h.systems = *systems;
  auto update = IntField(body, "update_ms", 1000, 100, 3'600'000);
  if (!update) return update.error();
  auto keep = IntField(body, "keep_age_s", 600, 60, 30 * 86'400);
  if (!keep) return keep.error();
  h.update_ms = *update;
  h.keep_age_s = *keep;
  return h;
}

json HealthToJson(unsigned systems, std::int64_t update_ms, std::int64_t keep_age_s) {
  return {{"systems", health::SubsystemLetters(systems)},
          {"update_ms", update_ms},
          {"keep_age_s", keep_age_s}};
}

// ---- Answers -----------------------------------------------------------------------------------

json Agent::HealthJson(int group_id) const {
  const HealthWatch& w = health_watches_.at(group_id);
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  json gpus = json::array();
  std::vector<health::GpuHealth> all;
  for (std::size_t pos : GroupGpus(group_id)) {
    const Entity& e = entities_[pos];
    auto m = monitors_.find(pos);
    health::GpuHealth h = m != monitors_.end()
                              ? m->second.Check(w.systems, e.gpu, now_ms)
                              : health::HealthMonitor().Check(w.systems, e.gpu, now_ms);
    json systems = json::array(), incidents = json::array();
    for (const auto& [s, v] : h.systems) {
      systems.push_back(
          {{"subsystem", health::SubsystemKey(s)}, {"result", health::VerdictKey(v)}});
    }
    for (const health::Incident& i : h.incidents) {
      incidents.push_back({{"subsystem", health::SubsystemKey(i.system)},
                           {"result", health::VerdictKey(i.verdict)},
                           {"message", i.message}});
    }
    gpus.push_back({{"gpu", e.gpu},
                    {"uuid", e.uuid},
                    {"overall", health::VerdictKey(h.overall)},
                    {"subsystems", systems},
                    {"incidents", incidents},
                    {"recommended_action", ActionJson(pos)}});
    all.push_back(std::move(h));
  }
  // A GPU the driver would not open (skipped) stays in the answer: its health is unknown, which is
  // a warning, never a pass.
  for (std::size_t pos : GroupEntities(group_id, groups_, entities_)) {
    const Entity& e = entities_[pos];
    if (e.kind != EntityKind::kGpu || e.device_pos) continue;
    std::string why = fmt::format("GPU {} cannot be read ({}): its health is unknown", e.gpu,
                                  e.reason.empty() ? "skipped" : e.reason);
    gpus.push_back(
        {{"gpu", e.gpu},
         {"uuid", e.uuid},
         {"state", "skipped"},
         {"overall", "warn"},
         {"subsystems", json::array()},
         {"incidents",
          json::array({{{"subsystem", "driver"}, {"result", "warn"}, {"message", why}}})},
         {"recommended_action", ActionJson(pos)}});
    health::GpuHealth unknown;
    unknown.overall = health::Verdict::kWarn;
    all.push_back(std::move(unknown));
  }
  health::Verdict overall = health::Overall(all);
  json out = HealthToJson(w.systems, w.update_ms, w.keep_age_s);
  out["group"] = group_id;
  out["overall"] = health::VerdictKey(overall);
  out["overall_text"] = health::VerdictText(overall);
  out["checked_unix_ms"] = now_ms;
  out["gpus"] = gpus;
  return out;
}

json Agent::DiagJson(int group_id) {
  health::DiagInputs in;
  in.system = &backend_.info();
  in.procfs_root = options_.procfs_root;
  in.dev_root = options_.dev_root;
  in.getenv = [](const char* name) { return std::getenv(name); };
  in.load_library = [](const std::string& lib, std::string* error) {
    void* h = dlopen(lib.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      *error = e != nullptr ? e : "dlopen failed";
      return false;
    }
    dlclose(h);
    return true;
  };
  Sample s;
  for (std::size_t pos : GroupGpus(group_id)) {
    const Entity& e = entities_[pos];
    health::DiagGpu g;
    g.index = e.gpu;
    g.minor_number = backend_.info().devices[*e.device_pos].minor_number;
    g.settings = backend_.ReadSettings(*e.device_pos);
    gpu::ReadEntity(backend_, e, health::ReadingFields(), s);
    NoteAction(pos, s);
    g.reading = health::ReadingFromSample(s, clock_.NowUnixNs() / kNsPerMs);
    ObserveStrayXids(pos, s.xid_events, clock_.NowUnixNs() / kNsPerMs);
    g.processes = backend_.Processes(*e.device_pos);
    in.gpus.push_back(std::move(g));
  }
  std::vector<health::DiagTest> tests = health::RunLevel1(in);
  json rows = json::array();
  for (const health::DiagTest& t : tests) {
    rows.push_back({{"name", t.name},
                    {"category", "Deployment"},
                    {"result", health::DiagResultKey(t.result)},
                    {"reason", t.reason}});
  }
  json gpus = json::array();
  for (const auto& g : in.gpus) gpus.push_back(g.index);
  return {{"group", group_id},
          {"level", 1},
          {"gpus", gpus},
          {"overall", health::DiagResultKey(health::OverallResult(tests))},
          {"tests", rows}};
}

// ---- Routes ------------------------------------------------------------------------------------

Agent::Reply Agent::HealthRoute(const std::string& method, const std::vector<std::string>& path,
                                const std::map<std::string, std::string>& q, const json& body) {
  const bool get = method == "GET" || method == "HEAD";
  const bool watch = path.size() == 2 && path[1] == "watch";
  if (path.size() > 2 || (path.size() == 2 && !watch)) return Route::Error(404, "no such path");
  auto gid = GroupParam(q);
  if (!gid) return Route::Error(400, gid.error().message);
  if (get || method == "DELETE") {
    if (!FindGroup(*gid)) return Route::Error(404, fmt::format("no group {}", *gid));
    auto it = health_watches_.find(*gid);
    if (it == health_watches_.end()) {
      return Route::Error(404, fmt::format("group {} has no health watch: set one first "
                                           "(gpulse health -g {} --set pm)",
                                           *gid, *gid));
    }
    if (get && !watch) {  // the check
      RefreshActions(*gid);
      return Route::Ok(HealthJson(*gid));
    }
    if (get) {
      json out = HealthToJson(it->second.systems, it->second.update_ms, it->second.keep_age_s);
      out["group"] = *gid;
      out["subsystems"] = health::SubsystemKeys(it->second.systems);
      return Route::Ok(out);
    }
    if (!watch) return Route::Error(405, "use GET; the watch is at /api/v1/health/watch");
    if (Status s = db_->DeleteManagement(kHealth, *gid); !s.ok())
      return Route::FromError(s.error());
    health_watches_.erase(it);
    (void)Replan(watches_);
    return Route::Ok({{"group", *gid}, {"cleared", true}});
  }
  if (method != "POST" || !watch) return Route::Error(405, "use GET, or POST/DELETE on /watch");
  auto group = BodyGroup(body);
  if (!group) return Route::FromError(group.error());
  const int g = *group;
  auto spec = HealthFromJson(body);
  if (!spec) return Route::Error(400, spec.error().message);
  auto before = health_watches_;
  health_watches_[g] = {spec->systems, spec->update_ms, spec->keep_age_s};
  Status s = Replan(watches_);
  if (s.ok())
    s = PutManagement(kHealth, g, HealthToJson(spec->systems, spec->update_ms, spec->keep_age_s));
  if (!s.ok()) {
    health_watches_ = std::move(before);
    (void)Replan(watches_);
    return Route::FromError(s.error());
  }
  json out = HealthToJson(spec->systems, spec->update_ms, spec->keep_age_s);
  out["group"] = g;
  out["subsystems"] = health::SubsystemKeys(spec->systems);
  return Route::Ok(out, 201);
}

Agent::Reply Agent::DiagRoute(const json& body) {
  for (const auto& [k, v] : body.items()) {
    if (k != "group" && k != "level") return Route::Error(400, "diag: unknown member '" + k + "'");
  }
  auto gid = BodyGroup(body);
  if (!gid) return Route::FromError(gid.error());
  const int group = *gid;
  auto level = IntField(body, "level", 1, 1, 4);
  if (!level) return Route::Error(400, "diag: \"level\" must be 1, 2, 3 or 4");
  if (*level > 1) {
    return Route::Error(
        501, fmt::format("diagnostics level {} runs GPU kernels (memory, PCIe, stress tests) that "
                         "gpulse does not have; only level 1 (deployment checks) runs",
                         *level));
  }
  return Route::Ok(DiagJson(group));
}

}  // namespace gpulse::agent
