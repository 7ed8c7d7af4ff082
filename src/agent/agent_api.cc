// The management API under /api/v1 (docs/agent.md, "API"): JSON in, JSON out, on the worker.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>

#include "agent/agent.h"
#include "agent/api_util.h"
#include "agent/history_query.h"
#include "agent/request_body.h"
#include "core/split.h"
#include "net/http_util.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::int64_t kDefaultJobUpdateMs = 1000;
constexpr std::int64_t kDefaultJobKeepAgeS = 4 * 3600;
constexpr std::int64_t kMinUpdateMs = 10;
constexpr std::int64_t kMaxKeepAgeS = 30 * 24 * 3600;

// Job ids and group names: 1 to 64 printable ASCII characters (job ids: no spaces or slashes,
// they appear in paths).
bool ValidName(const std::string& s, bool path_safe) {
  if (s.empty() || s.size() > 64) return false;
  for (unsigned char c : s) {
    if (c < 0x21 || c > 0x7e) {
      if (!(c == ' ' && !path_safe)) return false;
    }
    if (path_safe && (c == '/' || c == '?' || c == '#' || c == '%')) return false;
  }
  return true;
}

}  // namespace

std::optional<int> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 10 || !std::all_of(s.begin(), s.end(), ::isdigit))
    return std::nullopt;
  long long v = std::stoll(s);
  if (v > 0x7fffffff) return std::nullopt;
  return static_cast<int>(v);
}

Result<std::map<std::string, std::string>> ParseQuery(const std::string& target) {
  std::map<std::string, std::string> q;
  std::size_t at = target.find('?');
  if (at == std::string::npos) return q;
  std::string rest = target.substr(at + 1);
  std::size_t start = 0;
  while (start < rest.size()) {
    std::size_t end = rest.find('&', start);
    if (end == std::string::npos) end = rest.size();
    std::string kv = rest.substr(start, end - start);
    std::size_t eq = kv.find('=');
    auto k = net::PercentDecode(kv.substr(0, eq));
    auto v = eq == std::string::npos ? std::optional<std::string>("")
                                     : net::PercentDecode(kv.substr(eq + 1));
    if (!k || !v) return InvalidArgument("the query has a malformed %-escape: \"" + kv + "\"");
    if (!k->empty()) q[*k] = *v;
    start = end + 1;
  }
  return q;
}

// A whole-number member of a request body: absent gives `def`; anything but an integer in
// [lo, hi] is refused with a message naming the member.
Result<std::int64_t> IntField(const json& body, const char* key, std::int64_t def, std::int64_t lo,
                              std::int64_t hi) {
  if (!body.contains(key)) return def;
  const json& v = body[key];
  if (!v.is_number_integer()) {
    return InvalidArgument(fmt::format("\"{}\" must be a whole number, not {}", key, v.dump()));
  }
  bool in_range = v.is_number_unsigned()
                      ? v.get<std::uint64_t>() <= static_cast<std::uint64_t>(hi) &&
                            static_cast<std::int64_t>(v.get<std::uint64_t>()) >= lo
                      : v.get<std::int64_t>() >= lo && v.get<std::int64_t>() <= hi;
  if (!in_range) {
    return InvalidArgument(fmt::format("\"{}\" must be {} to {}, not {}", key, lo, hi, v.dump()));
  }
  return v.get<std::int64_t>();
}

// A value of the wrong type deep in a body must be a 400, never a crash of the agent: the routes
// check what they read, and this catches what they missed.
Agent::Reply Agent::Serve(const net::HttpRequest& req) {
  try {
    return Dispatch(req);
  } catch (const json::exception& e) {
    return Route::Error(400,
                        std::string("the request body has a value of the wrong type: ") + e.what());
  } catch (const std::exception& e) {
    return Route::Error(500, std::string("internal error: ") + e.what());
  }
}

Agent::Reply Agent::Dispatch(const net::HttpRequest& req) {
  std::vector<std::string> p = SplitNonEmpty(req.path, '/');  // "api", "v1", ...
  p.erase(p.begin(), p.begin() + 2);
  const std::string& m = req.method;
  const bool get = m == "GET" || m == "HEAD";
  json body = json::object();
  if (m == "POST" || m == "PUT") {
    auto parsed = ParseRequestBody(req.body);
    if (!parsed) return Route::Error(400, parsed.error().message);
    body = std::move(parsed).value();
  }
  auto method_not_allowed = [&](const char* allow) {
    Reply r = Route::Error(405, fmt::format("{} {} is not served: use {}", m, req.path, allow));
    return r;
  };
  if (p.empty()) return Route::Error(404, "no such API path: " + req.path);
  const std::string& what = p[0];
  if (what == "status" && p.size() == 1) return get ? Status_() : method_not_allowed("GET");
  if (what == "groups") {
    if (p.size() == 1) {
      if (get) return ListGroups();
      return m == "POST" ? CreateGroup(body) : method_not_allowed("GET or POST");
    }
    auto id = ParseId(p[1]);
    if (!id) return Route::Error(400, "group id \"" + p[1] + "\" is not a number");
    if (p.size() == 2) {
      if (get) return GroupInfo(*id);
      return m == "DELETE" ? DeleteGroup(*id) : method_not_allowed("GET or DELETE");
    }
    if (p.size() == 3 && p[2] == "entities") {
      return m == "POST" ? ChangeGroup(*id, body) : method_not_allowed("POST");
    }
  }
  if (what == "watches") {
    if (p.size() == 1) {
      if (get) return ListWatches();
      return m == "POST" ? AddWatch(body) : method_not_allowed("GET or POST");
    }
    auto id = ParseId(p[1]);
    if (!id) return Route::Error(400, "watch id \"" + p[1] + "\" is not a number");
    if (p.size() == 2) return m == "DELETE" ? DeleteWatch(*id) : method_not_allowed("DELETE");
  }
  if (what == "history" && p.size() == 1) {
    if (!get) return method_not_allowed("GET");
    auto q = ParseQuery(req.target);
    if (!q) return Route::Error(400, q.error().message);
    return History(*q);
  }
  if (what == "jobs") {
    if (p.size() == 1) {
      if (get) return ListJobs();
      return m == "POST" ? StartJob(body) : method_not_allowed("GET or POST");
    }
    auto id = net::PercentDecode(p[1], /*plus_is_space=*/false);
    if (!id) return Route::Error(400, "job id is not percent-encoded correctly");
    if (p.size() == 2) {
      if (get) return JobInfo(*id);
      return m == "DELETE" ? DeleteJob(*id) : method_not_allowed("GET or DELETE");
    }
    if (p.size() == 3 && p[2] == "stop") {
      return m == "POST" ? StopJob(*id) : method_not_allowed("POST");
    }
  }
  if (what == "stats" && p.size() == 1)
    return m == "POST" ? EnableStats(body) : method_not_allowed("POST");
  if (what == "processes" && p.size() == 2) {
    auto pid = ParseId(p[1]);
    if (!pid) return Route::Error(400, "pid \"" + p[1] + "\" is not a number");
    if (!get) return method_not_allowed("GET");
    auto q = ParseQuery(req.target);
    if (!q) return Route::Error(400, q.error().message);
    return ProcessInfo(static_cast<unsigned>(*pid), *q);
  }
  if (what == "health" || what == "policy" || what == "diag" || what == "config") {
    auto q = ParseQuery(req.target);
    if (!q) return Route::Error(400, q.error().message);
    if (what == "health") return HealthRoute(m, p, *q, body);
    if (what == "policy") return PolicyRoute(m, p, *q, body);
    if (what == "config") return ConfigRoute(m, p, *q, body);
    if (p.size() != 1) return Route::Error(404, "no such API path: " + req.path);
    // Diagnostics read every GPU's settings and load libraries on the worker: an action, under the
    // write rule, not a GET anyone may repeat.
    return m == "POST" ? DiagRoute(body) : method_not_allowed("POST");
  }
  if (what == "inject" && p.size() == 1) {
    return m == "POST" ? Inject(body) : method_not_allowed("POST");
  }
  if (what == "clock" && p.size() == 1) {
    if (get)
      return Route::Ok({{"simulated", clock_.simulated()}, {"now_unix_ns", clock_.NowUnixNs()}});
    return m == "POST" ? AdvanceClock(body) : method_not_allowed("GET or POST");
  }
  return Route::Error(404, "no such API path: " + req.path);
}

Agent::Reply Agent::Status_() const {
  const std::size_t points = history_.points();
  const std::size_t bytes = history_.bytes();
  json notes = plan_.notes;
  for (const std::string& n : load_notes_) notes.push_back(n);
  return Route::Ok({{"version", options_.version},
                    {"database", db_path_},
                    {"simulated_clock", clock_.simulated()},
                    {"now_unix_ns", clock_.NowUnixNs()},
                    {"entities", entities_.size()},
                    {"groups", groups_.size()},
                    {"watches", watches_.size()},
                    {"jobs", jobs_.size()},
                    {"ticks", ticks_},
                    {"skipped_ticks", skipped_ticks_},
                    {"checkpoints", checkpoints_},
                    {"last_checkpoint_error",
                     last_checkpoint_error_.empty() ? json(nullptr) : json(last_checkpoint_error_)},
                    {"history",
                     {{"series", history_.series()},
                      {"points", points},
                      {"bytes", bytes},
                      {"bytes_per_point",
                       points == 0 ? json(nullptr) : json(static_cast<double>(bytes) / points)},
                      {"bound_bytes", plan_.worst_case_bytes},
                      {"limit_bytes", options_.history_limit_bytes}}},
                    {"notes", notes}});
}

std::optional<std::string> Agent::RunningJobOn(int group_id) const {
  for (const auto& [id, job] : jobs_) {
    if (job.row.group_id == group_id && !job.row.stop_unix_ns) return id;
  }
  return std::nullopt;
}

std::optional<int> Agent::FindGroup(int id) const {
  if (id == kDefaultGroupId) return -1;
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].id == id) return static_cast<int>(i);
  }
  return std::nullopt;
}

json Agent::GroupJson(int id) const {
  auto at = FindGroup(id);
  json entities = json::array();
  for (std::size_t pos : GroupEntities(id, groups_, entities_)) {
    const Entity& e = entities_[pos];
    entities.push_back({{"entity", EntityKey(e)},
                        {"label", EntityLabel(e)},
                        {"kind", std::string(EntityKindName(e.kind))},
                        {"uuid", e.uuid},
                        {"state", std::string(EntityStateName(e.state))}});
  }
  json missing = json::array();
  if (*at >= 0) {
    for (const std::string& key : groups_[*at].entities) {
      bool here = std::any_of(entities_.begin(), entities_.end(),
                              [&](const Entity& e) { return EntityKey(e) == key; });
      if (!here) missing.push_back(key);
    }
  }
  return {{"id", id},
          {"name", *at < 0 ? kDefaultGroupName : groups_[*at].name},
          {"default", *at < 0},
          {"entities", entities},
          {"missing_entities", missing},
          {"created_unix_ns", *at < 0 ? json(nullptr) : json(groups_[*at].created_unix_ns)}};
}

Agent::Reply Agent::ListGroups() const {
  json out = json::array();
  out.push_back(GroupJson(kDefaultGroupId));
  for (const GroupRow& g : groups_) out.push_back(GroupJson(g.id));
  return Route::Ok({{"groups", out}});
}

Agent::Reply Agent::GroupInfo(int id) const {
  if (!FindGroup(id)) return Route::Error(404, fmt::format("no group {}", id));
  return Route::Ok(GroupJson(id));
}

Agent::Reply Agent::CreateGroup(const json& body) {
  if (!body.contains("name") || !body["name"].is_string()) {
    return Route::Error(400, "give the group's \"name\" (a string)");
  }
  std::string name = body["name"];
  if (!ValidName(name, false)) {
    return Route::Error(400, "a group name is 1 to 64 printable ASCII characters");
  }
  if (name == kDefaultGroupName)
    return Route::Error(400, "\"" + name + "\" is the default group's name");
  auto row = db_->CreateGroup(name, clock_.NowUnixNs());
  if (!row) return Route::FromError(row.error());
  groups_.push_back(*row);
  return Route::Ok(GroupJson(row->id), 201);
}

Agent::Reply Agent::ChangeGroup(int id, const json& body) {
  auto at = FindGroup(id);
  if (!at) return Route::Error(404, fmt::format("no group {}", id));
  if (*at < 0) return Route::Error(400, "the default group holds every GPU and cannot be changed");
  if (auto job = RunningJobOn(id)) {
    return Route::Error(409, fmt::format("job \"{}\" runs on group {}: stop it first", *job, id));
  }
  GroupRow g = groups_[*at];
  for (const char* op : {"add", "remove"}) {
    if (!body.contains(op)) continue;
    if (!body[op].is_array())
      return Route::Error(400, fmt::format("\"{}\" must be an array of entities", op));
    for (const json& item : body[op]) {
      if (!item.is_string())
        return Route::Error(400, "entities are strings: \"0\", \"GPU-…\", \"0:1\", \"0:1:0\"");
      std::string spec = item;
      if (spec.rfind("gpu:", 0) == 0) spec = spec.substr(4);
      auto sel = SelectEntities(entities_, spec);
      if (!sel) return Route::Error(400, sel.error().message);
      if (sel->empty()) return Route::Error(400, "no entity given");
      for (std::size_t pos : *sel) {
        std::string key = EntityKey(entities_[pos]);
        auto it = std::find(g.entities.begin(), g.entities.end(), key);
        if (std::string(op) == "add" && it == g.entities.end()) g.entities.push_back(key);
        if (std::string(op) == "remove") {
          if (it == g.entities.end()) {
            return Route::Error(400, fmt::format("group {} does not hold entity {}", id, key));
          }
          g.entities.erase(it);
        }
      }
    }
  }
  std::vector<GroupRow> before = groups_;
  groups_[*at] = g;
  if (Status s = Replan(watches_); !s.ok()) {
    groups_ = before;
    return Route::Error(409, s.error().message);
  }
  if (Status s = db_->SetGroupEntities(id, g.entities); !s.ok()) {
    groups_ = before;
    (void)Replan(watches_);
    return Route::FromError(s.error());
  }
  return Route::Ok(GroupJson(id));
}

Agent::Reply Agent::DeleteGroup(int id) {
  auto at = FindGroup(id);
  if (!at) return Route::Error(404, fmt::format("no group {}", id));
  if (*at < 0) return Route::Error(400, "the default group cannot be deleted");
  if (auto job = RunningJobOn(id)) {
    return Route::Error(409, fmt::format("job \"{}\" runs on group {}: stop it first", *job, id));
  }
  if (Status s = db_->DeleteGroup(id); !s.ok()) return Route::FromError(s.error());
  groups_.erase(groups_.begin() + *at);
  group_activity_.erase(id);
  for (const char* kind : {"health", "policy", "config"}) (void)db_->DeleteManagement(kind, id);
  health_watches_.erase(id);
  policies_.erase(id);
  std::erase_if(listeners_, [&](const Listener& l) {
    if (l.group_id == id) l.stream->Close();  // the listener hears its group is gone
    return l.group_id == id;
  });
  std::erase_if(config_targets_, [&](const auto& t) { return t.first == id; });
  std::vector<WatchRow> kept;
  for (const WatchRow& w : watches_) {
    if (w.group_id != id) kept.push_back(w);
  }
  (void)Replan(kept);  // fewer watches always fit
  return Route::Ok({{"deleted", id}});
}

json Agent::WatchJson(const WatchRow& w) const {
  json fields = json::array();
  std::size_t bound = 0, bytes = 0, points = 0;
  for (int fid : w.field_ids) {
    auto f = IndexOf(fid);
    fields.push_back({{"id", fid}, {"name", f ? std::string(FieldAt(*f).name) : ""}});
    if (!f) continue;
    for (std::size_t pos : GroupEntities(w.group_id, groups_, entities_)) {
      auto e = plan_.series.find({pos, *f});
      if (e == plan_.series.end()) continue;
      bound += Series::WorstCaseBytes(e->second.max_points);
      if (const Series* s = history_.Find({pos, *f})) bytes += s->bytes(), points += s->size();
    }
  }
  return {{"id", w.id},
          {"group", w.group_id},
          {"fields", fields},
          {"update_ms", w.update_ms},
          {"keep_age_s", w.keep_age_s},
          {"created_unix_ns", w.created_unix_ns},
          {"points", points},
          {"bytes", bytes},
          {"bound_bytes", bound}};
}

Agent::Reply Agent::ListWatches() const {
  json out = json::array();
  for (const WatchRow& w : watches_) out.push_back(WatchJson(w));
  return Route::Ok({{"watches", out},
                    {"history",
                     {{"bytes", history_.bytes()},
                      {"points", history_.points()},
                      {"bound_bytes", plan_.worst_case_bytes},
                      {"limit_bytes", options_.history_limit_bytes}}}});
}

Agent::Reply Agent::AddWatch(const json& body) {
  WatchRow w;
  auto group = IntField(body, "group", kDefaultGroupId, 0, 0x7fffffff);
  auto update = IntField(body, "update_ms", 1000, kMinUpdateMs, 3'600'000);
  auto keep = IntField(body, "keep_age_s", 3600, 1, kMaxKeepAgeS);
  for (const auto* r : {&group, &update, &keep}) {
    if (!*r) return Route::Error(400, r->error().message);
  }
  w.group_id = static_cast<int>(*group);
  if (!FindGroup(w.group_id)) return Route::Error(404, fmt::format("no group {}", w.group_id));
  if (!body.contains("fields")) return Route::Error(400, "give \"fields\": ids or names");
  std::string list;
  if (body["fields"].is_string()) {
    list = body["fields"];
  } else if (body["fields"].is_array()) {
    for (const json& f : body["fields"]) {
      if (!list.empty()) list += ",";
      list += f.is_string() ? f.get<std::string>() : f.dump();
    }
  } else {
    return Route::Error(400, "\"fields\" is a list of field ids or names");
  }
  // "all": the whole catalogue (what the entities cannot give is marked unsupported, not kept).
  if (list == "all") {
    list.clear();
    for (const FieldSpec& f : AllFields()) list += (list.empty() ? "" : ",") + std::to_string(f.id);
  }
  auto fields = ParseFieldList(list);
  if (!fields) return Route::Error(400, fields.error().message);
  for (FieldIndex f : *fields) w.field_ids.push_back(FieldAt(f).id);
  if (w.field_ids.empty()) return Route::Error(400, "no field given");
  w.update_ms = *update;
  w.keep_age_s = *keep;
  w.created_unix_ns = clock_.NowUnixNs();
  std::vector<WatchRow> next = watches_;
  next.push_back(w);
  Plan trial = BuildPlan(next, groups_, entities_);
  if (trial.worst_case_bytes > options_.history_limit_bytes) {
    return Route::Error(
        409,
        fmt::format(
            "this watch would raise the history bound to {} bytes, over the agent's limit of {} "
            "(--history-limit-mib): watch fewer fields or entities, less often, or for less time",
            trial.worst_case_bytes, options_.history_limit_bytes));
  }
  auto row = db_->AddWatch(w);
  if (!row) return Route::FromError(row.error());
  next.back() = *row;
  if (Status s = Replan(next); !s.ok()) return Route::Error(409, s.error().message);
  return Route::Ok(WatchJson(*row), 201);
}

Agent::Reply Agent::DeleteWatch(int id) {
  auto it =
      std::find_if(watches_.begin(), watches_.end(), [&](const WatchRow& w) { return w.id == id; });
  if (it == watches_.end()) return Route::Error(404, fmt::format("no watch {}", id));
  if (auto job = RunningJobOn(it->group_id)) {
    return Route::Error(409, fmt::format("job \"{}\" runs on group {}, whose history this watch "
                                         "keeps: stop it first",
                                         *job, it->group_id));
  }
  if (Status s = db_->DeleteWatch(id); !s.ok()) return Route::FromError(s.error());
  std::vector<WatchRow> kept = watches_;
  kept.erase(kept.begin() + (it - watches_.begin()));
  (void)Replan(kept);
  return Route::Ok({{"deleted", id}});
}

Agent::Reply Agent::History(const std::map<std::string, std::string>& q) const {
  HistoryRequest hr;
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  auto get = [&](const char* k) {
    auto it = q.find(k);
    return it == q.end() ? std::string() : it->second;
  };
  auto parsed =
      ParseHistoryRequest(get("fields"), get("since"), get("until"), get("format"), now_ms);
  if (!parsed) return Route::Error(400, parsed.error().message);
  hr = *parsed;
  std::vector<std::size_t> positions;
  if (!get("entities").empty()) {
    auto sel = SelectEntities(entities_, get("entities"));
    if (!sel) return Route::Error(400, sel.error().message);
    positions = *sel;
  } else {
    int gid = kDefaultGroupId;
    if (!get("group").empty()) {
      auto id = ParseId(get("group"));
      if (!id) return Route::Error(400, "group \"" + get("group") + "\" is not a number");
      gid = *id;
    }
    if (!FindGroup(gid)) return Route::Error(404, fmt::format("no group {}", gid));
    positions = GroupEntities(gid, groups_, entities_);
  }
  auto answer =
      AnswerHistory(hr, positions, entities_, history_, plan_, now_ms, options_.max_query_points);
  if (!answer) return Route::Error(413, answer.error().message);
  Reply r;
  if (hr.format == "csv") {
    r.text = std::move(answer->text);
    r.content_type = "text/csv; charset=utf-8";
    if (r.text.empty()) r.text = "\n";
  } else {
    r.body = std::move(answer->json);
    r.body["simulated"] = backend_.info().simulated;
    r.body["scenario"] = backend_.info().simulated ? json(backend_.info().scenario) : json(nullptr);
  }
  return r;
}

json Agent::JobJson(const Job& job) const {
  StatsWindow w;
  w.start_unix_ns = job.row.start_unix_ns;
  w.end_unix_ns = job.row.stop_unix_ns.value_or(clock_.NowUnixNs());
  w.gpus = ActivityGpus(job.row.group_id);
  json j{{"id", job.row.id},
         {"group", job.row.group_id},
         {"start_unix_ns", job.row.start_unix_ns},
         {"stop_unix_ns", job.row.stop_unix_ns ? json(*job.row.stop_unix_ns) : json(nullptr)},
         {"running", !job.row.stop_unix_ns},
         {"duration_s", static_cast<double>(w.end_unix_ns - w.start_unix_ns) / 1e9},
         {"notes", job.row.notes}};
  if (job.row.stop_unix_ns && !job.row.stats_json.empty()) {
    j["gpus"] = json::parse(job.row.stats_json, nullptr, false);
    if (!j["gpus"].is_array()) {
      j["gpus"] = json::array();
      j["notes"].push_back("the stored statistics of this job are damaged and cannot be shown");
    }
  } else {
    j["gpus"] = DeriveStats(w, history_, entities_, backend_.info(), job.activity);
  }
  // The job's energy is the sum over its GPUs that were read; a GPU read without an energy figure
  // makes the sum unknown (null), never an undercount. A GPU never read (skipped) adds nothing.
  // Its bound is the sum of theirs, null when one has none.
  double joules = 0, bound = 0;
  bool any = false, unknown = false, unbounded = false;
  for (const json& g : j["gpus"]) {
    const bool read = g.value("sample_count", 0) > 0;
    if (g.contains("energy_joules") && g["energy_joules"].is_number()) {
      joules += g["energy_joules"].get<double>();
      any = true;
      if (g.contains("energy_bound_joules") && g["energy_bound_joules"].is_number()) {
        bound += g["energy_bound_joules"].get<double>();
      } else {
        unbounded = true;
      }
    } else if (read) {
      unknown = true;
    }
  }
  j["energy_joules"] = any && !unknown ? json(joules) : json(nullptr);
  j["energy_bound_joules"] = any && !unknown && !unbounded ? json(bound) : json(nullptr);
  return j;
}

Agent::Reply Agent::ListJobs() const {
  json out = json::array();
  for (const auto& [id, job] : jobs_) {
    out.push_back(
        {{"id", id},
         {"group", job.row.group_id},
         {"start_unix_ns", job.row.start_unix_ns},
         {"stop_unix_ns", job.row.stop_unix_ns ? json(*job.row.stop_unix_ns) : json(nullptr)},
         {"running", !job.row.stop_unix_ns}});
  }
  return Route::Ok({{"jobs", out}});
}

Agent::Reply Agent::StartJob(const json& body) {
  if (!body.contains("id") || !body["id"].is_string())
    return Route::Error(400, "give the job's \"id\"");
  std::string id = body["id"];
  if (!ValidName(id, true)) {
    return Route::Error(
        400,
        "a job id is 1 to 64 printable ASCII characters, without spaces, '/', '?', '#' or '%'");
  }
  auto group = IntField(body, "group", kDefaultGroupId, 0, 0x7fffffff);
  if (!group) return Route::Error(400, group.error().message);
  const int gid = static_cast<int>(*group);
  if (!FindGroup(gid)) return Route::Error(404, fmt::format("no group {}", gid));
  if (jobs_.count(id) != 0) return Route::Error(409, "job \"" + id + "\" exists (remove it first)");
  json started = json::array();
  // The job's fields must be watched on its GPUs: a watch at DCGM's job defaults is added when no
  // watch covers them.
  std::set<int> covered;
  for (const WatchRow& w : watches_) {
    if (w.group_id == gid) covered.insert(w.field_ids.begin(), w.field_ids.end());
  }
  std::vector<int> missing;
  for (FieldIndex f : JobFields()) {
    if (covered.count(FieldAt(f).id) == 0) missing.push_back(FieldAt(f).id);
  }
  if (!missing.empty()) {
    json fields = json::array();
    for (int f : missing) fields.push_back(f);
    Reply added = AddWatch({{"group", gid},
                            {"fields", fields},
                            {"update_ms", kDefaultJobUpdateMs},
                            {"keep_age_s", kDefaultJobKeepAgeS}});
    if (added.status != 201) return added;
    started.push_back(added.body);
  }
  JobRow row;
  row.id = id;
  row.group_id = gid;
  row.start_unix_ns = clock_.NowUnixNs();
  if (Status s = db_->StartJob(row); !s.ok()) return Route::FromError(s.error());
  jobs_.emplace(id, Job{row, {}});
  SampleNow(gid);  // the job's first sample is at its start, as DCGM updates every field then
  json out = JobJson(jobs_.at(id));
  out["watches_added"] = started;
  return Route::Ok(out, 201);
}

Agent::Reply Agent::StopJob(const std::string& id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Route::Error(404, "no job \"" + id + "\"");
  Job& job = it->second;
  if (job.row.stop_unix_ns) return Route::Error(409, "job \"" + id + "\" has already stopped");
  SampleNow(job.row.group_id);  // and its last at its stop
  JobRow row = job.row;
  row.stop_unix_ns = clock_.NowUnixNs();
  StatsWindow w{row.start_unix_ns, *row.stop_unix_ns, ActivityGpus(row.group_id), std::nullopt};
  row.stats_json = DeriveStats(w, history_, entities_, backend_.info(), job.activity).dump();
  if (Status s = db_->PutJob(row); !s.ok()) return Route::FromError(s.error());
  job.row = row;
  (void)db_->PutMeta("activity/job/" + id, "{}");
  return Route::Ok(JobJson(job));
}

Agent::Reply Agent::JobInfo(const std::string& id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return Route::Error(404, "no job \"" + id + "\"");
  return Route::Ok(JobJson(it->second));
}

Agent::Reply Agent::DeleteJob(const std::string& id) {
  if (jobs_.count(id) == 0) return Route::Error(404, "no job \"" + id + "\"");
  if (Status s = db_->DeleteJob(id); !s.ok()) return Route::FromError(s.error());
  jobs_.erase(id);
  return Route::Ok({{"deleted", id}});
}

// `stats -e`: watches the job fields of a group and collects the processes seen on its GPUs, so
// `stats -p PID` can answer for any process later (DCGM's process watches).
Agent::Reply Agent::EnableStats(const json& body) {
  auto group = IntField(body, "group", kDefaultGroupId, 0, 0x7fffffff);
  auto update = IntField(body, "update_ms", kDefaultJobUpdateMs, kMinUpdateMs, 3'600'000);
  auto keep = IntField(body, "keep_age_s", kDefaultJobKeepAgeS, 1, kMaxKeepAgeS);
  for (const auto* r : {&group, &update, &keep}) {
    if (!*r) return Route::Error(400, r->error().message);
  }
  const int gid = static_cast<int>(*group);
  if (!FindGroup(gid)) return Route::Error(404, fmt::format("no group {}", gid));
  json fields = json::array();
  for (FieldIndex f : JobFields()) fields.push_back(FieldAt(f).id);
  Reply added =
      AddWatch({{"group", gid}, {"fields", fields}, {"update_ms", *update}, {"keep_age_s", *keep}});
  if (added.status != 201) return added;
  group_activity_.try_emplace(gid);
  if (Status s = db_->PutMeta("activity/group/" + std::to_string(gid),
                              group_activity_[gid].ToJson().dump());
      !s.ok()) {
    return Route::FromError(s.error());
  }
  return Route::Ok({{"group", gid}, {"watch", added.body}}, 201);
}

Agent::Reply Agent::ProcessInfo(unsigned pid, const std::map<std::string, std::string>& q) const {
  int gid = kDefaultGroupId;
  if (auto it = q.find("group"); it != q.end() && !it->second.empty()) {
    auto id = ParseId(it->second);
    if (!id) return Route::Error(400, "group \"" + it->second + "\" is not a number");
    gid = *id;
  }
  if (!FindGroup(gid)) return Route::Error(404, fmt::format("no group {}", gid));
  // The process's use is known from any activity that saw it: the group's process watch or a job.
  std::vector<const Activity*> sources;
  if (auto it = group_activity_.find(gid); it != group_activity_.end())
    sources.push_back(&it->second);
  for (const auto& [id, job] : jobs_) sources.push_back(&job.activity);
  // Every process those saw: the others on the same GPUs meanwhile are its conflicting ones.
  Activity merged;
  bool seen = false;
  for (const Activity* a : sources) {
    for (const auto& [k, p] : a->processes) {
      seen = seen || p.pid == pid;
      auto [it, added] = merged.processes.try_emplace(k, p);
      if (!added && p.last_seen_unix_ns > it->second.last_seen_unix_ns) it->second = p;
    }
    merged.xids.insert(merged.xids.end(), a->xids.begin(), a->xids.end());
  }
  // The group's watch and each job saw the same XIDs: each once.
  std::sort(merged.xids.begin(), merged.xids.end(), [](const XidSeen& a, const XidSeen& b) {
    return std::tie(a.unix_ns, a.gpu, a.xid) < std::tie(b.unix_ns, b.gpu, b.xid);
  });
  merged.xids.erase(std::unique(merged.xids.begin(), merged.xids.end(),
                                [](const XidSeen& a, const XidSeen& b) {
                                  return a.unix_ns == b.unix_ns && a.gpu == b.gpu && a.xid == b.xid;
                                }),
                    merged.xids.end());
  if (!seen) {
    return Route::Error(404, fmt::format("no process {} was seen on the GPUs of group {} (enable "
                                         "process watches first: gpulse stats -g {} -e)",
                                         pid, gid, gid));
  }
  StatsWindow w;
  w.only_pid = pid;
  w.start_unix_ns = std::numeric_limits<std::int64_t>::max();
  w.end_unix_ns = 0;
  std::set<unsigned> gpus;
  for (const auto& [k, p] : merged.processes) {
    if (p.pid != pid) continue;
    w.start_unix_ns = std::min(w.start_unix_ns, p.first_seen_unix_ns);
    w.end_unix_ns = std::max(w.end_unix_ns, p.last_seen_unix_ns);
    gpus.insert(p.gpu);
  }
  for (std::size_t pos = 0; pos < entities_.size(); ++pos) {
    if (entities_[pos].kind == EntityKind::kGpu && gpus.count(entities_[pos].gpu) != 0)
      w.gpus.push_back(pos);
  }
  json gpu_stats = DeriveStats(w, history_, entities_, backend_.info(), merged);
  return Route::Ok({{"pid", pid},
                    {"group", gid},
                    {"first_seen_unix_ns", w.start_unix_ns},
                    {"last_seen_unix_ns", w.end_unix_ns},
                    {"gpus", gpu_stats}});
}

void Agent::SetStaleHook(std::function<void()> stale) {
  std::lock_guard lock(stale_mu_);
  stale_hook_ = std::move(stale);
}

Agent::Reply Agent::AdvanceClock(const json& body) {
  if (!clock_.simulated()) {
    return Route::Error(409,
                        "the agent runs on the real clock (start it with --simulate and "
                        "GPULSE_SIM_CLOCK to drive a simulated one)");
  }
  if (!body.contains("advance_s") || !body["advance_s"].is_number() ||
      body["advance_s"].get<double>() < 0 || body["advance_s"].get<double>() > 86400.0 * 31) {
    return Route::Error(400, "give \"advance_s\": simulated seconds to move on, 0 to 2678400");
  }
  const std::int64_t target =
      clock_.NowUnixNs() + std::llround(body["advance_s"].get<double>() * 1e9);
  const std::uint64_t before = ticks_;
  RunDueTicks(target / kNsPerMs);
  clock_.AdvanceTo(target);
  backend_.SetSimulatedClock(clock_.SimulatedSeconds(target));
  {
    // A scrape after this reads the moved world, not a snapshot from before it.
    std::lock_guard lock(stale_mu_);
    if (stale_hook_) stale_hook_();
  }
  Status s = Checkpoint();
  return Route::Ok({{"now_unix_ns", clock_.NowUnixNs()},
                    {"ticks", ticks_ - before},
                    {"checkpoint", s.ok() ? json("saved") : json(s.error().message)}});
}

}  // namespace gpulse::agent
