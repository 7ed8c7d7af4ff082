// Health watches, policies, level-1 diagnostics and configuration targets on the agent
// (docs/health.md, docs/adr/0020-health-policy-config.md): their state (loaded from the database,
// the watches they add, the monitors and watchers kept per GPU), what each tick feeds them, their
// exposition and /health, and the helpers the routes share. The answers and routes of each are in
// agent_health.cc (health watches, diagnostics), agent_policy.cc and agent_config.cc. Everything
// here runs on the worker thread, like the rest of the agent.
#include <fmt/format.h>

#include <algorithm>

#include "agent/agent.h"
#include "agent/alert_sender.h"
#include "agent/api_util.h"
#include "agent/manage_util.h"
#include "core/fields.h"
#include "core/xid_catalogue.h"
#include "health/reading.h"
#include "prom/writer.h"

namespace gpulse::agent {

using nlohmann::json;

// ---- Helpers (manage_util.h) -------------------------------------------------------------------

void Log(const std::string& line) { fmt::print(stderr, "gpulse agent: {}\n", line); }

Result<int> GroupParam(const std::map<std::string, std::string>& q) {
  auto it = q.find("group");
  if (it == q.end() || it->second.empty()) return kDefaultGroupId;
  auto id = ParseId(it->second);
  if (!id) return InvalidArgument("group \"" + it->second + "\" is not a number");
  return *id;
}

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
  NoteAction(pos, s);
  ObserveReading(pos, health::ReadingFromSample(s, t_ms));
}

void Agent::NoteAction(std::size_t pos, const Sample& s) {
  if (entities_[pos].kind == EntityKind::kGpu && s.recommended_action) {
    actions_[pos] = *s.recommended_action;
  }
}

json Agent::ActionJson(std::size_t pos) const {
  auto it = actions_.find(pos);
  if (it == actions_.end()) return nullptr;
  const XidAction& a = it->second;
  json j = {{"action", a.action}, {"rank", a.rank}};
  if (a.action == "NONE") return j;
  j["xid"] = a.xid;
  j["description"] = a.description;
  j["since_unix_ms"] = a.t_unix_ns / 1'000'000;
  j["source"] = a.from_driver ? "driver" : "catalogue";
  if (const ActionInfo* info = FindAction(a.action)) j["summary"] = info->summary;
  return j;
}

void Agent::RefreshActions(int group_id) {
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  const FieldIndex xid = *IndexOf(230);
  Sample s;
  for (std::size_t pos : GroupEntities(group_id, groups_, entities_)) {
    if (entities_[pos].kind != EntityKind::kGpu) continue;
    gpu::ReadEntity(backend_, entities_[pos], std::span<const FieldIndex>(&xid, 1), s);
    NoteAction(pos, s);
    ObserveStrayXids(pos, s.xid_events, now_ms);
  }
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
  if (auto a = actions_.find(pos); a != actions_.end()) r.action = a->second;
  ObserveReading(pos, r);
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
  // An action that needs more than the application restarted (docs/faults.md).
  const int reset_rank = FindAction("RESET_GPU")->rank;
  for (const auto& [pos, a] : actions_) {
    if (a.rank >= reset_rank) {
      return fmt::format("GPU {}: recommended action {} (Xid {})", entities_[pos].gpu, a.action,
                         a.xid);
    }
  }
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

}  // namespace gpulse::agent
