// Health watches, policies, level-1 diagnostics and configuration targets on the agent
// (docs/health.md, docs/adr/0020-health-policy-config.md): their API routes, their state, and what
// each tick feeds them. Everything here runs on the worker thread, like the rest of the agent.
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "agent/agent.h"
#include "agent/alert_sender.h"
#include "agent/api_util.h"
#include "core/fields.h"
#include "health/diag.h"
#include "health/reading.h"
#include "prom/writer.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::size_t kMaxViolations = 1000;
constexpr std::size_t kListenerQueue = 4096;  // violations a slow listener may fall behind by
constexpr std::size_t kMaxListeners = 64;
constexpr const char* kHealth = "health";
constexpr const char* kPolicy = "policy";
constexpr const char* kConfig = "config";

void Log(const std::string& line) { fmt::print(stderr, "gpulse agent: {}\n", line); }

std::string Rfc3339(std::int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(unix_ms % 1000));
}

Result<int> GroupParam(const std::map<std::string, std::string>& q) {
  auto it = q.find("group");
  if (it == q.end() || it->second.empty()) return kDefaultGroupId;
  auto id = ParseId(it->second);
  if (!id) return InvalidArgument("group \"" + it->second + "\" is not a number");
  return *id;
}

struct HealthSpec {
  unsigned systems = 0;
  std::int64_t update_ms = 1000;
  std::int64_t keep_age_s = 600;
};

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

// "00000000:18:00.0" (NVML) -> "0000:18:00.0" (sysfs).
std::string SysfsBusId(const std::string& nvml) {
  std::string id = nvml;
  if (id.size() == 16 && id[8] == ':') id = id.substr(4);
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

}  // namespace

// ---- State -------------------------------------------------------------------------------------

Status Agent::LoadManagement() {
  auto rows = db_->Management();
  if (!rows) return rows.error();
  for (const ManagementRow& row : *rows) {
    json spec = json::parse(row.spec, nullptr, false);
    auto damaged = [&](const std::string& why) {
      return InvalidArgument(
          fmt::format("{}: the {} of group {} is damaged ({}); refusing to start "
                      "on it",
                      db_path_, row.kind, row.group_id, why));
    };
    if (spec.is_discarded() || !spec.is_object()) return damaged("not a JSON object");
    if (row.kind == kHealth) {
      auto h = HealthFromJson(spec);
      if (!h) return damaged(h.error().message);
      health_watches_[row.group_id] = {h->systems, h->update_ms, h->keep_age_s};
    } else if (row.kind == kPolicy) {
      auto update = IntField(spec, "update_ms", 1000, 100, 3'600'000);
      json p = spec;
      p.erase("update_ms");
      auto parsed = health::PolicyFromJson(p);
      if (!parsed || !update)
        return damaged(!parsed ? parsed.error().message : update.error().message);
      policies_[row.group_id] = {*parsed, *update, {}};
    } else if (row.kind == kConfig) {
      auto t = health::ConfigFromJson(spec);
      if (!t) return damaged(t.error().message);
      config_targets_.emplace_back(row.group_id, *t);
    } else {
      return damaged("unknown kind");
    }
  }
  return Status::Ok();
}

Status Agent::PutManagement(const std::string& kind, int group_id, const json& spec) {
  return db_->PutManagement({kind, group_id, spec.dump(), clock_.NowUnixNs()});
}

std::vector<std::size_t> Agent::GroupGpus(int group_id) const {
  std::vector<std::size_t> out;
  for (std::size_t pos : GroupEntities(group_id, groups_, entities_)) {
    if (entities_[pos].kind == EntityKind::kGpu && entities_[pos].device_pos) out.push_back(pos);
  }
  return out;
}

// The watches health watches and policies need: their fields on their groups, as if an operator
// had set them (not stored, not listed by `watch -l`; the plan and the history treat them alike).
// The InfoROM is validated by reading the flash (nvmlDeviceValidateInforom): once a minute at the
// most, and only for watches of the InfoROM subsystem.
std::vector<WatchRow> Agent::ManagementWatches() const {
  constexpr int kInforomField = 84;
  constexpr std::int64_t kInforomMinMs = 60'000;
  std::vector<int> ids;
  for (FieldIndex f : health::ReadingFields()) {
    if (FieldAt(f).id != kInforomField) ids.push_back(FieldAt(f).id);
  }
  std::vector<WatchRow> out;
  for (const auto& [gid, w] : health_watches_) {
    out.push_back({0, gid, ids, w.update_ms, w.keep_age_s, 0});
    if (w.systems & health::kInforom) {
      out.push_back(
          {0, gid, {kInforomField}, std::max(w.update_ms, kInforomMinMs), w.keep_age_s, 0});
    }
  }
  for (const auto& [gid, p] : policies_) out.push_back({0, gid, ids, p.update_ms, 60, 0});
  return out;
}

// Keeps a health monitor for every GPU a health watch covers (its window the longest keep-age of
// those watches) and a policy watcher for every GPU of a policy's group; those of GPUs no longer
// covered are dropped with what they had seen.
void Agent::RefreshMonitors() {
  std::map<std::size_t, std::int64_t> windows;
  for (const auto& [gid, w] : health_watches_) {
    for (std::size_t pos : GroupGpus(gid)) {
      windows[pos] = std::max(windows[pos], w.keep_age_s * 1000);
    }
  }
  std::erase_if(monitors_, [&](const auto& m) { return windows.count(m.first) == 0; });
  for (const auto& [pos, window] : windows) {
    auto [it, added] = monitors_.try_emplace(pos, window);
    if (!added && it->second.window_ms() != window) it->second.set_window(window);
  }
  for (auto& [gid, p] : policies_) {
    const std::vector<std::size_t> gpus = GroupGpus(gid);
    std::erase_if(p.watchers, [&](const auto& w) {
      return std::find(gpus.begin(), gpus.end(), w.first) == gpus.end();
    });
    for (std::size_t pos : gpus) p.watchers.try_emplace(pos);
  }
}

// ---- Ticks -------------------------------------------------------------------------------------

void Agent::ObserveHealth(std::size_t pos, const Sample& s, std::int64_t t_ms) {
  if (entities_[pos].kind != EntityKind::kGpu) return;
  ObserveReading(pos, health::ReadingFromSample(s, t_ms));
}

void Agent::ObserveReading(std::size_t pos, const health::GpuReading& r) {
  if (auto monitor = monitors_.find(pos); monitor != monitors_.end()) monitor->second.Observe(r);
  for (auto& [gid, p] : policies_) {
    auto w = p.watchers.find(pos);
    if (w == p.watchers.end()) continue;
    for (health::Violation& v : w->second.Observe(p.spec, r)) Deliver(gid, pos, std::move(v));
  }
}

// XID events are handed to whichever read asks for them first: a read that is not a tick (a
// scrape, a live frame, diagnostics) passes them on here, so health watches, policies and job
// activity see every XID once, whoever read it.
void Agent::ObserveStrayXids(std::size_t pos, const std::vector<std::uint64_t>& xids,
                             std::int64_t t_ms) {
  if (xids.empty() || entities_[pos].kind != EntityKind::kGpu) return;
  const std::int64_t t_ns = t_ms * kNsPerMs;
  const unsigned gpu = entities_[pos].gpu;
  auto covers = [&](int group_id) {
    const auto gpus = ActivityGpus(group_id);
    return std::find(gpus.begin(), gpus.end(), pos) != gpus.end();
  };
  for (auto& [id, job] : jobs_) {
    if (!job.row.stop_unix_ns && covers(job.row.group_id)) job.activity.NoteXids(gpu, xids, t_ns);
  }
  for (auto& [gid, act] : group_activity_) {
    if (covers(gid)) act.NoteXids(gpu, xids, t_ns);
  }
  health::GpuReading r;
  r.t_ms = t_ms;
  r.xids = xids;
  ObserveReading(pos, r);
}

void Agent::Deliver(int group_id, std::size_t pos, health::Violation v) {
  ViolationRecord rec;
  rec.seq = ++violation_seq_;
  rec.group_id = group_id;
  rec.pos = pos;
  rec.violation = std::move(v);
  ++violation_counts_[{pos, rec.violation.condition}];
  const PolicyState& policy = policies_.at(group_id);
  // One reset per GPU per reading: several violations at once (or policies of two groups that
  // share the GPU) reset it once; the others say so.
  if (policy.spec.action == health::PolicyAction::kGpuReset &&
      last_reset_ms_[pos] == rec.violation.t_ms) {
    rec.action = {{"action", "gpu_reset"},
                  {"done", false},
                  {"error", "reset already, by a violation of the same reading"}};
  } else if (policy.spec.action == health::PolicyAction::kGpuReset) {
    last_reset_ms_[pos] = rec.violation.t_ms;
    rec.action = ResetForPolicy(pos);
    if (policy.spec.validation == health::PolicyValidation::kShort) {
      rec.validation = DiagJson(group_id);
    }
  }
  const json j = ViolationJson(rec);
  Log(fmt::format("policy violation on GPU {}: {}", entities_[pos].gpu, rec.violation.message));
  auto frame = std::make_shared<const std::string>(
      fmt::format("id: {}\nevent: violation\ndata: {}\n\n", rec.seq,
                  j.dump(-1, ' ', false, json::error_handler_t::replace)));
  std::erase_if(listeners_, [&](const Listener& l) {
    if (l.group_id != group_id) return l.stream->closed();
    const std::uint64_t before = l.stream->dropped();
    const bool open = l.stream->Push(frame);
    listener_dropped_ += l.stream->dropped() - before;
    return !open;
  });
  if (alerts_) {
    const Entity& e = entities_[pos];
    const bool critical =
        rec.violation.condition == health::kCondDbe || rec.violation.condition == health::kCondXid;
    json labels = {{"alertname", "GpulsePolicyViolation"},
                   {"condition", std::string(health::ConditionKey(rec.violation.condition))},
                   {"gpu", std::to_string(e.gpu)},
                   {"UUID", e.uuid},
                   {"group", std::to_string(group_id)},
                   {"severity", critical ? "critical" : "warning"}};
    if (!options_.hostname.empty()) labels["Hostname"] = options_.hostname;
    if (rec.violation.condition == health::kCondXid) {
      labels["xid"] = fmt::format("{}", rec.violation.value);
    }
    alerts_->Send(
        {{"labels", labels},
         {"annotations",
          {{"summary", rec.violation.message}, {"value", fmt::format("{}", rec.violation.value)}}},
         {"startsAt", Rfc3339(rec.violation.t_ms)}});
  }
  violations_.push_back(std::move(rec));
  while (violations_.size() > kMaxViolations) violations_.pop_front();
}

// A policy's GPU reset: simulated GPUs through the simulator; a real GPU only with --allow-reset,
// as root, through its PCI function's sysfs reset. The targets of its groups are applied again
// afterwards (the configuration is declarative).
json Agent::ResetForPolicy(std::size_t pos) {
  const Entity& e = entities_[pos];
  json out = {{"action", "gpu_reset"}};
  Status s = Status::Ok();
  if (backend_.info().simulated) {
    s = backend_.ResetGpu(*e.device_pos);
  } else if (!options_.allow_reset) {
    s = Error{ErrorCode::kNoPermission,
              "resetting a real GPU needs the agent's --allow-reset (it was not given)"};
  } else if (geteuid() != 0) {
    s = Error{ErrorCode::kNoPermission, "resetting a real GPU needs root"};
  } else {
    const std::string path =
        options_.sysfs_root + "/bus/pci/devices/" + SysfsBusId(e.pci_bus_id) + "/reset";
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || write(fd, "1", 1) != 1) {
      s = Error{ErrorCode::kIo, path + ": " + std::strerror(errno)};
    }
    if (fd >= 0) close(fd);
  }
  out["done"] = s.ok();
  if (!s.ok()) {
    out["error"] = s.error().message;
    Log(fmt::format("policy reset of GPU {} not done: {}", e.gpu, s.error().message));
    return out;
  }
  Log(fmt::format("GPU {} reset by a policy", e.gpu));
  bool refused = false;
  json applied = ApplyTargets({pos}, &refused);
  if (!applied.empty()) out["config"] = applied;
  return out;
}

// ---- Answers -----------------------------------------------------------------------------------

json Agent::ViolationJson(const ViolationRecord& r) const {
  const Entity& e = entities_[r.pos];
  json j = {{"seq", r.seq},
            {"group", r.group_id},
            {"gpu", e.gpu},
            {"uuid", e.uuid},
            {"condition", std::string(health::ConditionKey(r.violation.condition))},
            {"t_unix_ms", r.violation.t_ms},
            {"time", Rfc3339(r.violation.t_ms)},
            {"value", r.violation.value},
            {"message", r.violation.message}};
  if (!r.action.is_null()) j["action"] = r.action;
  if (!r.validation.is_null()) j["validation"] = r.validation;
  return j;
}

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
                    {"incidents", incidents}});
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
          json::array({{{"subsystem", "driver"}, {"result", "warn"}, {"message", why}}})}});
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

// ---- Exposition and /health --------------------------------------------------------------------

std::string Agent::ManagementExposition() const {
  std::string out;
  std::string host_label;
  if (!options_.hostname.empty()) {
    host_label = ",Hostname=\"";
    prom::AppendEscapedLabelValue(host_label, options_.hostname);
    host_label += '"';
  }
  auto gpu_labels = [&](std::size_t pos) {
    const Entity& e = entities_[pos];
    std::string l = fmt::format("gpu=\"{}\",UUID=\"", e.gpu);
    prom::AppendEscapedLabelValue(l, e.uuid);
    return l + "\"" + host_label;
  };
  auto header = [&out](SelfMetric m) {
    const SelfMetricSpec& spec = SelfMetricAt(m);
    prom::AppendFamilyHeader(out, spec.name, spec.help, spec.prom_type);
  };
  if (!health_watches_.empty()) {
    header(SelfMetric::kHealth);
    const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
    std::map<std::size_t, unsigned> systems;  // a GPU in several watched groups: every subsystem
    for (const auto& [gid, w] : health_watches_) {
      for (std::size_t pos : GroupGpus(gid)) systems[pos] |= w.systems;
    }
    for (const auto& [pos, mask] : systems) {
      auto m = monitors_.find(pos);
      if (m == monitors_.end()) continue;
      health::GpuHealth h = m->second.Check(mask, entities_[pos].gpu, now_ms);
      for (const auto& [s, v] : h.systems) {
        out += fmt::format("gpulse_health{{{},subsystem=\"{}\"}} {}\n", gpu_labels(pos),
                           health::SubsystemKey(s), static_cast<int>(v));
      }
    }
  }
  if (!policies_.empty()) {
    header(SelfMetric::kPolicyViolations);
    std::map<std::pair<std::size_t, unsigned>, std::uint64_t> counts;
    for (const auto& [gid, p] : policies_) {
      for (const auto& [pos, w] : p.watchers) {
        for (health::Condition c : health::AllConditions()) {
          if (p.spec.conditions & c) counts[{pos, c}] = 0;
        }
      }
    }
    for (const auto& [key, n] : violation_counts_) counts[key] = n;
    for (const auto& [key, n] : counts) {
      out += fmt::format("gpulse_policy_violations_total{{{},condition=\"{}\"}} {}\n",
                         gpu_labels(key.first),
                         health::ConditionKey(static_cast<health::Condition>(key.second)), n);
    }
    header(SelfMetric::kPolicyListeners);
    out += fmt::format("gpulse_policy_listeners {}\n",
                       std::count_if(listeners_.begin(), listeners_.end(),
                                     [](const Listener& l) { return !l.stream->closed(); }));
    header(SelfMetric::kPolicyListenerDropped);
    out += fmt::format("gpulse_policy_listener_dropped_total {}\n", listener_dropped_);
  }
  if (alerts_) {
    AlertSender::Stats s = alerts_->stats();
    header(SelfMetric::kAlertsSent);
    out += fmt::format("gpulse_alerts_sent_total {}\n", s.sent);
    header(SelfMetric::kAlertsFailed);
    out += fmt::format("gpulse_alerts_failed_total {}\n", s.failed);
    header(SelfMetric::kAlertsDropped);
    out += fmt::format("gpulse_alerts_dropped_total {}\n", s.dropped);
  }
  return out;
}

std::string Agent::HealthFailure() const {
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  for (const auto& [gid, w] : health_watches_) {
    for (std::size_t pos : GroupGpus(gid)) {
      auto m = monitors_.find(pos);
      if (m == monitors_.end()) continue;
      health::GpuHealth h = m->second.Check(w.systems, entities_[pos].gpu, now_ms);
      if (h.overall != health::Verdict::kFail) continue;
      for (const health::Incident& i : h.incidents) {
        if (i.verdict == health::Verdict::kFail) return "health watch: " + i.message;
      }
    }
  }
  return "";
}

// ---- Routes ------------------------------------------------------------------------------------

// The group a request body names ("group", default 0): its id, or why not (400, 404).
Result<int> Agent::BodyGroup(const json& body) const {
  auto group = IntField(body, "group", kDefaultGroupId, 0, 0x7fffffff);
  if (!group) return group.error();
  const int gid = static_cast<int>(*group);
  if (!FindGroup(gid)) return NotFound(fmt::format("no group {}", gid));
  return gid;
}

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
    if (get && !watch) return Route::Ok(HealthJson(*gid));  // the check
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

Agent::Reply Agent::PolicyRoute(const std::string& method, const std::vector<std::string>& path,
                                const std::map<std::string, std::string>& q, const json& body) {
  const bool get = method == "GET" || method == "HEAD";
  const std::string sub = path.size() > 1 ? path[1] : "";
  if (path.size() > 2) return Route::Error(404, "no such API path");
  auto gid_q = GroupParam(q);
  if (!gid_q) return Route::Error(400, gid_q.error().message);
  if (sub == "stream") {
    if (!get) return Route::Error(405, "use GET");
    if (!FindGroup(*gid_q)) return Route::Error(404, fmt::format("no group {}", *gid_q));
    std::erase_if(listeners_, [](const Listener& l) { return l.stream->closed(); });
    if (listeners_.size() >= kMaxListeners) {
      return Route::Error(503, fmt::format("{} policy listeners are connected, the most this agent "
                                           "serves",
                                           kMaxListeners));
    }
    Reply r;
    r.stream = std::make_shared<net::EventStream>(kListenerQueue);
    r.content_type = "text/event-stream";
    // A comment at once: the listener knows it is registered before any violation.
    r.stream->Push(std::make_shared<const std::string>(
        fmt::format(": listening for violations of group {}\n\n", *gid_q)));
    listeners_.push_back({*gid_q, r.stream});
    return r;
  }
  if (sub == "violations") {
    if (!get) return Route::Error(405, "use GET");
    std::uint64_t since = 0;
    if (auto it = q.find("since"); it != q.end()) {
      auto v = ParseId(it->second);
      if (!v) return Route::Error(400, "since \"" + it->second + "\" is not a number");
      since = static_cast<std::uint64_t>(*v);
    }
    json list = json::array();
    for (const ViolationRecord& r : violations_) {
      if (r.seq > since && (q.count("group") == 0 || r.group_id == *gid_q)) {
        list.push_back(ViolationJson(r));
      }
    }
    return Route::Ok({{"violations", list}, {"last_seq", violation_seq_}});
  }
  if (!sub.empty()) return Route::Error(404, "no such API path");
  if (get) {
    if (!FindGroup(*gid_q)) return Route::Error(404, fmt::format("no group {}", *gid_q));
    auto it = policies_.find(*gid_q);
    if (it == policies_.end()) {
      return Route::Error(404, fmt::format("group {} has no policy", *gid_q));
    }
    json p = health::PolicyToJson(it->second.spec);
    p["update_ms"] = it->second.update_ms;
    return Route::Ok({{"group", *gid_q}, {"policy", p}});
  }
  if (method == "DELETE") {
    if (Status s = db_->DeleteManagement(kPolicy, *gid_q); !s.ok())
      return Route::FromError(s.error());
    policies_.erase(*gid_q);
    (void)Replan(watches_);
    return Route::Ok({{"group", *gid_q}, {"cleared", true}});
  }
  if (method != "POST") return Route::Error(405, "use GET, POST or DELETE");
  auto group = BodyGroup(body);
  if (!group) return Route::FromError(group.error());
  const int gid = *group;
  auto update = IntField(body, "update_ms", 1000, 100, 3'600'000);
  if (!update) return Route::Error(400, update.error().message);
  json spec_json = body;
  spec_json.erase("update_ms");
  auto spec = health::PolicyFromJson(spec_json);
  if (!spec) return Route::Error(400, spec.error().message);
  json stored = health::PolicyToJson(*spec);
  stored["update_ms"] = *update;
  auto previous = policies_.find(gid);
  std::optional<PolicyState> before;
  if (previous != policies_.end()) before = previous->second;
  policies_[gid] = {*spec, *update, {}};
  Status s = Replan(watches_);
  if (s.ok()) s = PutManagement(kPolicy, gid, stored);
  if (!s.ok()) {  // the policy before it, or none
    if (before)
      policies_[gid] = *before;
    else
      policies_.erase(gid);
    (void)Replan(watches_);
    return Route::FromError(s.error());
  }
  return Route::Ok({{"group", gid}, {"policy", stored}}, 201);
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
