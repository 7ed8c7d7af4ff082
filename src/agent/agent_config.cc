// Configuration targets on the agent (docs/health.md): what a GPU's groups ask of it, applying
// and putting back settings, the answer comparing target and current settings, and the config API
// routes. On the worker thread.
#include <fmt/format.h>

#include <algorithm>

#include "agent/agent.h"
#include "agent/api_util.h"
#include "agent/manage_util.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

std::string SettingKey(health::ConfigSetting s) {
  switch (s) {
    case health::ConfigSetting::kComputeMode:
      return "compute_mode";
    case health::ConfigSetting::kEcc:
      return "ecc";
    case health::ConfigSetting::kAppClocks:
      return "app_clocks";
    case health::ConfigSetting::kPowerLimit:
      return "power_limit_w";
  }
  return "unknown";
}

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

int HttpStatusOf(ErrorCode c) {
  switch (c) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNoPermission:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kUnavailable:
      return 409;
    default:
      return 500;
  }
}

}  // namespace

health::ConfigTarget Agent::TargetFor(std::size_t pos) const {
  health::ConfigTarget t;
  for (const auto& [gid, target] : config_targets_) {
    const auto members = GroupGpus(gid);
    if (std::find(members.begin(), members.end(), pos) != members.end()) {
      t = health::MergeTargets(t, target);
    }
  }
  return t;
}

// Sets on each GPU what differs from its target; the answer lists what was set and what failed.
json Agent::ApplyTargets(const std::vector<std::size_t>& gpus, bool* refused) {
  json out = json::array();
  for (std::size_t pos : gpus) {
    const Entity& e = entities_[pos];
    if (!e.readable() || !e.device_pos) continue;
    const health::ConfigTarget t = TargetFor(pos);
    if (t.empty()) continue;
    const std::size_t dev = *e.device_pos;
    const DeviceSettings current = backend_.ReadSettings(dev);
    json set = json::array(), errors = json::array();
    for (health::ConfigSetting which : health::Differences(t, current)) {
      Status s = Status::Ok();
      switch (which) {
        case health::ConfigSetting::kComputeMode:
          s = backend_.SetComputeMode(dev, *t.compute_mode);
          break;
        case health::ConfigSetting::kEcc:
          s = backend_.SetEccMode(dev, *t.ecc);
          break;
        case health::ConfigSetting::kAppClocks:
          s = backend_.SetApplicationClocks(dev, *t.app_mem_clock_mhz, *t.app_sm_clock_mhz);
          break;
        case health::ConfigSetting::kPowerLimit:
          s = backend_.SetPowerLimit(dev, *t.power_limit_w);
          break;
      }
      if (s.ok()) {
        set.push_back(SettingKey(which));
      } else {
        *refused = true;
        errors.push_back({{"setting", SettingKey(which)},
                          {"status", HttpStatusOf(s.error().code)},
                          {"error", fmt::format("GPU {}: {}", e.gpu, s.error().message)}});
      }
    }
    out.push_back({{"gpu", e.gpu}, {"set", set}, {"errors", errors}});
  }
  return out;
}

// Sets back, on each GPU, the settings `applied` says were changed, to their values in `before`.
void Agent::RestoreSettings(const std::map<std::size_t, DeviceSettings>& before,
                            const json& applied) {
  for (const auto& [pos, old] : before) {
    const Entity& e = entities_[pos];
    for (const json& g : applied) {
      if (g["gpu"] != e.gpu) continue;
      const std::size_t dev = *e.device_pos;
      for (const json& key : g["set"]) {
        Status s = Status::Ok();
        if (key == "compute_mode" && old.compute_mode)
          s = backend_.SetComputeMode(dev, *old.compute_mode);
        if (key == "ecc" && old.ecc_pending) s = backend_.SetEccMode(dev, *old.ecc_pending);
        if (key == "app_clocks" && old.app_mem_clock_mhz && old.app_sm_clock_mhz) {
          s = backend_.SetApplicationClocks(dev, *old.app_mem_clock_mhz, *old.app_sm_clock_mhz);
        }
        if (key == "power_limit_w" && old.power_limit_w)
          s = backend_.SetPowerLimit(dev, *old.power_limit_w);
        if (!s.ok()) {
          Log(fmt::format("GPU {}: putting {} back failed: {}", e.gpu, key.get<std::string>(),
                          s.error().message));
        }
      }
    }
  }
}

json Agent::ConfigJson(int group_id) {
  json gpus = json::array();
  for (std::size_t pos : GroupGpus(group_id)) {
    const Entity& e = entities_[pos];
    const health::ConfigTarget t = TargetFor(pos);
    const DeviceSettings s = backend_.ReadSettings(*e.device_pos);
    json rows = json::array();
    auto row = [&](const char* key, json target, json current) {
      rows.push_back({{"setting", key}, {"target", target}, {"current", current}});
    };
    row("compute_mode", Opt(t.compute_mode), Opt(s.compute_mode));
    row("ecc", Opt(t.ecc), Opt(s.ecc_current));
    row("ecc_pending", json(nullptr), Opt(s.ecc_pending));
    row("sync_boost", json(nullptr), json(nullptr));
    row("app_mem_clock_mhz", Opt(t.app_mem_clock_mhz), Opt(s.app_mem_clock_mhz));
    row("app_sm_clock_mhz", Opt(t.app_sm_clock_mhz), Opt(s.app_sm_clock_mhz));
    row("power_limit_w", Opt(t.power_limit_w), Opt(s.power_limit_w));
    json limits = {{"power_limit_w",
                    {{"min", Opt(s.min_power_limit_w)},
                     {"max", Opt(s.max_power_limit_w)},
                     {"default", Opt(s.default_power_limit_w)}}},
                   {"app_mem_clocks_mhz", s.supported_mem_clocks_mhz},
                   {"persistence_mode", Opt(s.persistence_mode)}};
    gpus.push_back({{"gpu", e.gpu},
                    {"uuid", e.uuid},
                    {"name", e.name},
                    {"settings", rows},
                    {"limits", limits},
                    {"matches_target", health::Differences(t, s).empty()}});
  }
  json target = json(nullptr);
  for (const auto& [gid, t] : config_targets_) {
    if (gid == group_id) target = health::ConfigToJson(t);
  }
  return {{"group", group_id}, {"target", target}, {"gpus", gpus}};
}

// ---- Routes ------------------------------------------------------------------------------------

Agent::Reply Agent::ConfigRoute(const std::string& method, const std::vector<std::string>& path,
                                const std::map<std::string, std::string>& q, const json& body) {
  const bool get = method == "GET" || method == "HEAD";
  const bool enforce = path.size() == 2 && path[1] == "enforce";
  if (path.size() > 2 || (path.size() == 2 && !enforce)) return Route::Error(404, "no such path");
  if (get && !enforce) {
    auto gid = GroupParam(q);
    if (!gid) return Route::Error(400, gid.error().message);
    if (!FindGroup(*gid)) return Route::Error(404, fmt::format("no group {}", *gid));
    return Route::Ok(ConfigJson(*gid));
  }
  if (method == "DELETE" && !enforce) {
    auto gid = GroupParam(q);
    if (!gid) return Route::Error(400, gid.error().message);
    if (Status s = db_->DeleteManagement(kConfig, *gid); !s.ok())
      return Route::FromError(s.error());
    std::erase_if(config_targets_, [&](const auto& t) { return t.first == *gid; });
    return Route::Ok({{"group", *gid}, {"cleared", true}});
  }
  if (method != "POST") return Route::Error(405, "use GET, POST or DELETE");
  auto group = BodyGroup(body);
  if (!group) return Route::FromError(group.error());
  const int gid = *group;
  const std::vector<std::size_t> gpus = GroupGpus(gid);
  if (enforce) {
    bool refused = false;
    json applied = ApplyTargets(gpus, &refused);
    return Route::Ok({{"group", gid}, {"applied", applied}, {"complete", !refused}},
                     refused ? 207 : 200);
  }
  auto target = health::ConfigFromJson(body);
  if (!target) return Route::Error(400, target.error().message);
  // The group's new target: what it had, with this set's settings over it.
  health::ConfigTarget merged = *target;
  for (const auto& [g, t] : config_targets_) {
    if (g == gid) merged = health::MergeTargets(t, *target);
  }
  // Every GPU's range first: nothing is set unless all of them allow it.
  for (std::size_t pos : gpus) {
    const Entity& e = entities_[pos];
    if (!e.readable()) continue;
    Status s = health::CheckTarget(merged, backend_.ReadSettings(*e.device_pos), e.gpu);
    if (!s.ok()) return Route::Error(HttpStatusOf(s.error().code), s.error().message);
  }
  auto previous = config_targets_;
  std::map<std::size_t, DeviceSettings> before;
  for (std::size_t pos : gpus) {
    if (entities_[pos].readable()) before[pos] = backend_.ReadSettings(*entities_[pos].device_pos);
  }
  std::erase_if(config_targets_, [&](const auto& t) { return t.first == gid; });
  config_targets_.emplace_back(gid, merged);
  bool refused = false;
  json applied = ApplyTargets(gpus, &refused);
  if (refused) {
    // Not kept, and what this set changed before the refusal is put back: a set applies whole or
    // not at all, and a target the driver refuses (no permission) is not retried at every reset.
    config_targets_ = std::move(previous);
    RestoreSettings(before, applied);
    int status = 500;
    for (const json& g : applied) {
      for (const json& err : g["errors"]) status = err["status"].get<int>();
    }
    std::string first;
    for (const json& g : applied) {
      for (const json& err : g["errors"]) {
        if (first.empty()) first = err["error"].get<std::string>();
      }
    }
    Reply r = Route::Error(status, first);
    r.body["applied"] = applied;
    return r;
  }
  if (Status s = PutManagement(kConfig, gid, health::ConfigToJson(merged)); !s.ok()) {
    config_targets_ = std::move(previous);
    return Route::FromError(s.error());
  }
  return Route::Ok({{"group", gid}, {"target", health::ConfigToJson(merged)}, {"applied", applied}},
                   201);
}

}  // namespace gpulse::agent
