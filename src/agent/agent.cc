#include "agent/agent.h"

#include <fmt/format.h>
#include <malloc.h>

#include <cstdlib>
#include <future>

#include "agent/alert_sender.h"
#include "core/clock.h"
#include "health/reading.h"

namespace gpulse::agent {
namespace {

using nlohmann::json;

constexpr std::int64_t kNsPerMs = 1'000'000;
constexpr std::size_t kMaxProcessesPerActivity = 1024;

void Log(const std::string& line) { fmt::print(stderr, "gpulse agent: {}\n", line); }

std::string JobActivityKey(const std::string& id) { return "activity/job/" + id; }
std::string GroupActivityKey(int id) { return "activity/group/" + std::to_string(id); }

std::int64_t NextAligned(std::int64_t now_ms, std::int64_t interval_ms) {
  return (now_ms / interval_ms + 1) * interval_ms;
}

Result<Activity> LoadActivity(StateDb& db, const std::string& key) {
  auto text = db.Meta(key);
  if (!text) return text.error();
  if (!*text) return Activity{};
  json j = json::parse(**text, nullptr, false);
  try {
    return Activity::FromJson(j);
  } catch (const json::exception& e) {
    return InvalidArgument("the saved activity \"" + key + "\" is damaged (" + e.what() +
                           "); refusing to start on it");
  }
}

}  // namespace

Agent::Agent(AgentOptions options, gpu::Backend& backend)
    : options_(std::move(options)),
      backend_(backend),
      entities_(BuildEntities(backend.info())),
      clock_(options_.simulated_clock_s ? AgentClock::Simulated(*options_.simulated_clock_s)
                                        : AgentClock::Real()) {}

Agent::~Agent() { Shutdown(); }

Result<std::unique_ptr<Agent>> Agent::Create(AgentOptions options, gpu::Backend& backend) {
  if (options.simulated_clock_s && !backend.info().simulated) {
    return InvalidArgument("a simulated clock needs simulated GPUs (--simulate)");
  }
  std::unique_ptr<Agent> a(new Agent(std::move(options), backend));
  auto db = StateDb::Open(a->options_.state_dir);
  if (!db) return db.error();
  a->db_ = std::move(db).value();
  a->db_path_ = a->db_->path();
  if (!a->options_.alertmanager_url.empty()) {
    auto sender = AlertSender::Create(a->options_.alertmanager_url);
    if (!sender) return sender.error();
    a->alerts_ = std::move(sender).value();
  }
  if (Status s = a->Load(); !s.ok()) return s.error();
  return a;
}

// The first writes (the notes on interrupted jobs, "running since"), then the worker. Nothing is
// written before this: a start that fails later (the address is taken) leaves the database as it
// was.
Status Agent::Start() {
  for (auto& [id, job] : jobs_) {
    if (job.row.stop_unix_ns || pending_note_.empty()) continue;
    job.row.notes.push_back(pending_note_);
    if (Status s = db_->PutJob(job.row); !s.ok()) return s;
  }
  const std::int64_t now = clock_.NowUnixNs();
  if (Status s = db_->PutMeta("clean_shutdown", "0"); !s.ok()) return s;
  // Alive from now: a crash before the first checkpoint is still seen at the next start.
  if (Status s = db_->PutMeta("last_alive_unix_ns", std::to_string(now)); !s.ok()) return s;
  if (clock_.simulated()) backend_.SetSimulatedClock(clock_.SimulatedSeconds(now));
  started_ = true;
  worker_ = std::thread([this] { Loop(); });
  // The configuration is declarative: the targets are applied again when the agent starts.
  if (!config_targets_.empty()) {
    Post([this] {
      std::vector<std::size_t> gpus;
      for (std::size_t pos = 0; pos < entities_.size(); ++pos) {
        if (entities_[pos].kind == EntityKind::kGpu) gpus.push_back(pos);
      }
      bool refused = false;
      nlohmann::json applied = ApplyTargets(gpus, &refused);
      Log("configuration targets applied at start: " + applied.dump());
    });
  }
  return Status::Ok();
}

// Groups, watches, running jobs and their activity, the spilled history, and the note Start adds
// to every job that was running while the agent was down. Reads only; a damaged row is refused.
Status Agent::Load() {
  auto groups = db_->Groups();
  if (!groups) return groups.error();
  groups_ = std::move(groups).value();
  auto watches = db_->Watches();
  if (!watches) return watches.error();
  for (const WatchRow& w : *watches) {
    if (w.update_ms < 10 || w.update_ms > 3'600'000 || w.keep_age_s < 1 ||
        w.keep_age_s > 30 * 86'400) {
      return InvalidArgument(fmt::format(
          "{}: watch {} is damaged (update_ms {}, keep_age_s {}); refusing to start on it",
          db_path_, w.id, w.update_ms, w.keep_age_s));
    }
  }
  auto jobs = db_->Jobs();
  if (!jobs) return jobs.error();
  auto blobs = db_->LoadHistory();
  if (!blobs) return blobs.error();
  std::size_t dropped = 0;
  std::size_t loaded = history_.Load(*blobs, entities_, &dropped);
  if (dropped > 0) {
    load_notes_.push_back(
        fmt::format("{} stored series were not loaded (an entity this machine no longer has, or a "
                    "damaged image)",
                    dropped));
  }
  auto last_alive = db_->Meta("last_alive_unix_ns");
  auto clean = db_->Meta("clean_shutdown");
  if (!last_alive || !clean) return !last_alive ? last_alive.error() : clean.error();
  std::optional<std::int64_t> down_since;
  if (*last_alive) {
    char* end = nullptr;
    long long v = std::strtoll((*last_alive)->c_str(), &end, 10);
    if (end != nullptr && *end == '\0' && v > 0) down_since = v;
  }
  if (clock_.simulated() && down_since) clock_.AdvanceTo(*down_since);
  const std::int64_t now = clock_.NowUnixNs();
  if (down_since) {
    bool was_clean = *clean && **clean == "1";
    pending_note_ = fmt::format(
        "the agent was down from {} to {} ({}): no samples then", *down_since, now,
        was_clean
            ? "a clean shutdown"
            : "it stopped without shutting down: samples after its last checkpoint were lost");
  }
  for (JobRow& row : *jobs) {
    Job job{row, {}};
    if (!row.stop_unix_ns) {
      auto act = LoadActivity(*db_, JobActivityKey(row.id));
      if (!act) return act.error();
      job.activity = std::move(act).value();
    }
    jobs_.emplace(row.id, std::move(job));
  }
  std::vector<int> ids = {kDefaultGroupId};
  for (const GroupRow& g : groups_) ids.push_back(g.id);
  for (int id : ids) {
    auto act = LoadActivity(*db_, GroupActivityKey(id));
    if (!act) return act.error();
    auto stored = db_->Meta(GroupActivityKey(id));
    if (stored && *stored) group_activity_[id] = *act;  // a process watch was enabled
  }
  if (Status s = LoadManagement(); !s.ok()) return s;
  if (Status s = Replan(*watches); !s.ok()) return s;
  loaded_ = true;
  last_checkpoint_ms_ = now / kNsPerMs;
  Log(fmt::format("state {}: {} group(s), {} watch(es), {} job(s), {} series loaded{}", db_path_,
                  groups_.size(), watches_.size(), jobs_.size(), loaded,
                  clock_.simulated() ? ", simulated clock" : ""));
  return Status::Ok();
}

Status Agent::Replan(const std::vector<WatchRow>& watches) {
  std::vector<WatchRow> all = watches;
  for (WatchRow& w : ManagementWatches()) all.push_back(std::move(w));
  Plan plan = BuildPlan(all, groups_, entities_);
  if (plan.worst_case_bytes > options_.history_limit_bytes) {
    return InvalidArgument(fmt::format(
        "the watches would need up to {} bytes of history, over the agent's limit of {} "
        "(--history-limit-mib): watch fewer fields or entities, less often, or for less time",
        plan.worst_case_bytes, options_.history_limit_bytes));
  }
  std::map<SeriesKey, std::size_t> keep;
  for (const auto& [key, e] : plan.series) {
    history_.Ensure(key, e.max_points);
    keep[key] = e.max_points;
  }
  history_.Retain(keep);
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  std::map<std::int64_t, std::int64_t> due;
  for (const auto& [interval, entities] : plan.cadences) {
    auto it = next_due_ms_.find(interval);
    due[interval] = it != next_due_ms_.end() ? it->second : NextAligned(now_ms, interval);
  }
  next_due_ms_ = std::move(due);
  plan_ = std::move(plan);
  watches_ = watches;
  RefreshMonitors();
  return Status::Ok();
}

void Agent::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
}

std::optional<std::int64_t> Agent::NextDueMs() const {
  std::optional<std::int64_t> next;
  for (const auto& [interval, due] : next_due_ms_) {
    if (!next || due < *next) next = due;
  }
  return next;
}

void Agent::Loop() {
  for (;;) {
    std::deque<std::function<void()>> tasks;
    {
      std::unique_lock lock(mu_);
      auto ready = [this] { return stopping_ || !queue_.empty(); };
      std::optional<std::int64_t> due = clock_.simulated() ? std::nullopt : NextDueMs();
      if (due) {
        auto wait = std::chrono::nanoseconds(*due * kNsPerMs - UnixNowNs());
        cv_.wait_for(lock, wait, ready);
      } else {
        cv_.wait(lock, ready);
      }
      tasks.swap(queue_);
      if (stopping_ && tasks.empty()) return;
    }
    for (auto& t : tasks) {
      try {
        t();
      } catch (const std::exception& e) {  // a bug; the daemon and its data outlive it
        Log(std::string("internal error in a request, answered nothing: ") + e.what());
      }
    }
    if (!clock_.simulated()) {
      RunDueTicks(clock_.NowUnixNs() / kNsPerMs);
      MaybeCheckpoint();
    }
  }
}

// Every tick due up to `until_ms`, in time order. On the real clock a tick more than half its
// interval late is skipped, never burst (as the record sampler does); the simulated clock runs
// them all, telling the simulator each tick's time first.
void Agent::RunDueTicks(std::int64_t until_ms) {
  for (;;) {
    auto next = std::min_element(next_due_ms_.begin(), next_due_ms_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (next == next_due_ms_.end() || next->second > until_ms) return;
    const auto [interval, due] = *next;
    if (clock_.simulated()) {
      clock_.AdvanceTo(due * kNsPerMs);
      backend_.SetSimulatedClock(clock_.SimulatedSeconds(due * kNsPerMs));
      Tick(interval, due);
      next->second = due + interval;
      continue;
    }
    if (until_ms - due > interval / 2) {
      ++skipped_ticks_;
      next->second = NextAligned(until_ms, interval);
      continue;
    }
    Tick(interval, due);
    next->second = due + interval;
  }
}

void Agent::Tick(std::int64_t interval_ms, std::int64_t t_ms) {
  auto cadence = plan_.cadences.find(interval_ms);
  if (cadence == plan_.cadences.end()) return;
  ++ticks_;
  last_tick_ms_[interval_ms] = t_ms;
  for (const auto& [pos, fields] : cadence->second) {
    gpu::ReadEntity(backend_, entities_[pos], fields, scratch_);
    const bool lost = scratch_.state == DeviceState::kLost;
    if (lost && MarkLost(entities_, pos, t_ms * kNsPerMs, "the driver answered GPU_IS_LOST")) {
      Log(fmt::format("{} lost at {:.3f}", EntityLabel(entities_[pos]), t_ms / 1000.0));
    }
    for (FieldIndex f : fields) {
      SeriesKey key{pos, f};
      if (!lost && scratch_.unsupported[f]) {
        history_.MarkUnsupported(key);
        continue;
      }
      history_.Append(key, t_ms, lost ? std::nullopt : scratch_.values[f]);
      history_.DropOlderThan(key, t_ms - plan_.series.at(key).keep_age_ms);
    }
    NoteActivity(pos, scratch_, t_ms);
    ObserveHealth(pos, scratch_, t_ms);
  }
}

void Agent::SampleNow(int group_id) {
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  const std::vector<std::size_t> members = GroupEntities(group_id, groups_, entities_);
  for (const auto& [interval, entities] : plan_.cadences) {
    bool covers = false;
    for (std::size_t pos : members) covers = covers || entities.count(pos) != 0;
    if (!covers) continue;
    auto last = last_tick_ms_.find(interval);
    if (last != last_tick_ms_.end() && last->second == now_ms) continue;  // it ticked now
    if (clock_.simulated()) backend_.SetSimulatedClock(clock_.SimulatedSeconds(now_ms * kNsPerMs));
    Tick(interval, now_ms);
  }
}

// The GPU positions whose processes and XIDs a group's process watch or a running job collects.
std::vector<std::size_t> Agent::ActivityGpus(int group_id) const {
  std::vector<std::size_t> out;
  for (std::size_t pos : GroupEntities(group_id, groups_, entities_)) {
    if (entities_[pos].kind == EntityKind::kGpu) out.push_back(pos);
  }
  return out;
}

void Agent::NoteActivity(std::size_t pos, const Sample& s, std::int64_t t_ms) {
  const Entity& e = entities_[pos];
  if (e.kind != EntityKind::kGpu || !e.device_pos) return;
  std::vector<Activity*> into;
  for (auto& [id, job] : jobs_) {
    if (job.row.stop_unix_ns) continue;
    for (std::size_t g : ActivityGpus(job.row.group_id)) {
      if (g == pos) into.push_back(&job.activity);
    }
  }
  for (auto& [gid, act] : group_activity_) {
    for (std::size_t g : ActivityGpus(gid)) {
      if (g == pos) into.push_back(&act);
    }
  }
  if (into.empty()) return;
  const std::int64_t now_ns = t_ms * kNsPerMs;
  ProcessList list = backend_.Processes(*e.device_pos);
  for (Activity* a : into) {
    a->NoteProcesses(e.gpu, list, now_ns);
    a->NoteXids(e.gpu, s.xid_events, now_ns);
    a->Trim(kMaxProcessesPerActivity);
  }
}

void Agent::MaybeCheckpoint() {
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  if (now_ms - last_checkpoint_ms_ < options_.checkpoint_ms) return;
  if (Status s = Checkpoint(); !s.ok()) {
    if (last_checkpoint_error_ != s.error().message) Log("checkpoint failed: " + s.error().message);
    last_checkpoint_error_ = s.error().message;
  } else {
    last_checkpoint_error_.clear();
  }
}

Status Agent::Checkpoint() {
  last_checkpoint_ms_ = clock_.NowUnixNs() / kNsPerMs;
  Status saved = db_->SaveHistory(history_.SpillOneByOne(entities_));
  // The images and SQLite's pages are freed by now, in the worker's malloc arena, which glibc
  // keeps: give them back, or a 4-hour history costs half as much again in freed memory.
  malloc_trim(0);
  if (!saved.ok()) return saved;
  for (const auto& [id, job] : jobs_) {
    if (job.row.stop_unix_ns) continue;
    if (Status s = db_->PutMeta(JobActivityKey(id), job.activity.ToJson().dump()); !s.ok())
      return s;
  }
  for (const auto& [gid, act] : group_activity_) {
    if (Status s = db_->PutMeta(GroupActivityKey(gid), act.ToJson().dump()); !s.ok()) return s;
  }
  ++checkpoints_;
  return db_->PutMeta("last_alive_unix_ns", std::to_string(clock_.NowUnixNs()));
}

void Agent::Shutdown() {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = !stopping_;
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // A start that never got going (refused, or the address taken) writes nothing.
  if (!first || db_ == nullptr || !loaded_ || !started_) return;
  if (Status s = Checkpoint(); !s.ok())
    Log("saving state at shutdown failed: " + s.error().message);
  if (Status s = db_->PutMeta("clean_shutdown", "1"); !s.ok()) Log(s.error().message);
  stopped_ = true;
}

bool Agent::Handle(const net::HttpRequest& req, net::Respond& respond) {
  if (req.path.rfind("/api/v1/", 0) != 0) return false;
  const bool write = req.method == "POST" || req.method == "PUT" || req.method == "DELETE";
  if (write && !req.peer && !options_.tcp_writes) {
    net::HttpResponse r;
    r.status = 403;
    r.content_type = "application/json";
    r.body = json{{"error",
                   "changes over TCP need authenticated clients (basic auth in --web-config-file) "
                   "or --allow-tcp-writes; use the unix socket on the node"}}
                 .dump() +
             "\n";
    respond(std::move(r));
    return true;
  }
  auto task = [this, req, respond] {
    Reply r = Serve(req);
    net::HttpResponse out;
    out.status = r.status;
    if (r.stream) {
      out.content_type = r.content_type;
      out.headers.emplace_back("Cache-Control", "no-cache");
      out.stream = std::move(r.stream);
    } else if (!r.text.empty() || !r.content_type.empty()) {
      out.content_type = r.content_type.empty() ? "text/plain; charset=utf-8" : r.content_type;
      out.body = std::move(r.text);
    } else {
      out.content_type = "application/json";
      // Messages echo what the client sent, which may not be UTF-8: replaced, never a throw.
      out.body = r.body.dump(-1, ' ', false, json::error_handler_t::replace);
      out.body += '\n';
    }
    out.compressible = out.body.size() > 1024;
    const bool large = out.body.size() > (4u << 20);
    respond(std::move(out));
    // A large answer's JSON tree was freed in this thread's arena, which glibc keeps: give it back.
    if (large) malloc_trim(0);
  };
  {
    std::unique_lock lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      lock.unlock();
      cv_.notify_all();
      return true;
    }
  }
  respond(net::TextResponse(503, "the agent is shutting down"));
  return true;
}

std::shared_ptr<const exporter::Snapshot> Agent::Read(std::span<const FieldIndex> fields,
                                                      bool processes) {
  std::vector<FieldIndex> wanted(fields.begin(), fields.end());
  auto promise = std::make_shared<std::promise<std::shared_ptr<const exporter::Snapshot>>>();
  auto answer = promise->get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return nullptr;
    queue_.push_back([this, promise, wanted, processes] {
      std::shared_ptr<const exporter::Snapshot> snap;
      try {
        snap = ReadOnWorker(wanted, processes);
      } catch (const std::exception& e) {
        Log(std::string("internal error in a device read: ") + e.what());
      }
      promise->set_value(std::move(snap));
    });
  }
  cv_.notify_all();
  return answer.get();
}

// The exporter's read: a field this agent watches on an entity, read within min_refresh, is
// served from the watch's latest point; the rest is read from the device now, in one call.
std::shared_ptr<const exporter::Snapshot> Agent::ReadOnWorker(std::span<const FieldIndex> fields,
                                                              bool processes) {
  auto snap = std::make_shared<exporter::Snapshot>();
  snap->start_mono_ns = MonotonicNowNs();
  snap->fields.assign(fields.begin(), fields.end());
  snap->entities.resize(entities_.size());
  const std::int64_t now_ms = clock_.NowUnixNs() / kNsPerMs;
  const FieldIndex xid = *IndexOf(230);
  for (std::size_t pos = 0; pos < entities_.size(); ++pos) {
    exporter::DeviceReading& r = snap->entities[pos];
    r.readable = entities_[pos].readable();
    Sample& s = r.sample;
    std::vector<FieldIndex> read_now, shared;
    for (FieldIndex f : fields) {
      const Series* series = history_.Find({pos, f});
      auto latest = series != nullptr ? series->Latest() : std::nullopt;
      bool fresh = f != xid && latest && now_ms - latest->t_ms < options_.min_refresh_ms;
      (fresh ? shared : read_now).push_back(f);
    }
    if (!r.readable && entities_[pos].kind == EntityKind::kGpu) {
      gpu::ReadEntity(backend_, entities_[pos], fields, s);  // skipped: the fault layer's Xids
      NoteAction(pos, s);
      ObserveStrayXids(pos, s.xid_events, now_ms);
    } else if (!r.readable || read_now.empty()) {
      s.values.assign(AllFields().size(), std::nullopt);
      s.unsupported.assign(AllFields().size(), false);
      s.xid_events.clear();
      s.xid_counts.clear();
      s.state = entities_[pos].state == EntityState::kLost ? DeviceState::kLost : DeviceState::kOk;
    } else {
      std::uint64_t before = backend_.stats().failed_calls;
      gpu::ReadEntity(backend_, entities_[pos], read_now, s);
      r.failed_calls = backend_.stats().failed_calls - before;
      NoteAction(pos, s);
      ObserveStrayXids(pos, s.xid_events, now_ms);
      if (s.state == DeviceState::kLost) {
        MarkLost(entities_, pos, clock_.NowUnixNs(), "the driver answered GPU_IS_LOST");
      }
    }
    if (r.readable) {
      for (FieldIndex f : shared) s.values[f] = history_.Find({pos, f})->Latest()->value;
    }
    s.t_mono_ns = MonotonicNowNs();  // the exposition ages readings on the real clock
    s.t_unix_ns = clock_.NowUnixNs();
  }
  if (processes) exporter::ReadProcesses(backend_, *snap);
  snap->failed_calls_total = backend_.stats().failed_calls;
  snap->profiling_failed_total = backend_.stats().profiling_failed_calls;
  snap->profiling_rejected_total = backend_.stats().profiling_rejected_values;
  exporter::NoteFaults(backend_, *snap);
  snap->extension_exposition = ManagementExposition();
  if (options_.health_in_health_endpoint) snap->extension_health_failure = HealthFailure();
  snap->duration_ns = MonotonicNowNs() - snap->start_mono_ns;
  return snap;
}

}  // namespace gpulse::agent
