// The node agent (docs/agent.md, docs/adr/0018-node-agent.md): `gpulse agent` is the exporter plus
// state. It keeps groups, field watches with their history, and job statistics in a state
// directory (SQLite, WAL), samples watched fields on its own clock, and serves a management API
// under /api/v1 on the exporter's address and on a unix socket.
//
//   exporter loop thread --Handle--> task queue --> worker thread (sole owner of the backend)
//   probe thread --------Read------> task queue -->   ticks of the watches, history, jobs, API
//
// Every piece of agent state lives on the worker thread, so nothing else needs a lock; requests
// wait in the queue behind a tick, never the other way round for long (a tick reads only the
// watched fields). A change the API acknowledges (201/200) is committed to the database first.
//
// Thread-safety: Handle and Read from any thread; Create, Shutdown and the destructor from one.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/clock.h"
#include "agent/history.h"
#include "agent/job_stats.h"
#include "agent/plan.h"
#include "agent/state_db.h"
#include "exporter/exporter.h"
#include "gpu/backend.h"
#include "health/config_target.h"
#include "health/health_monitor.h"
#include "health/policy.h"
#include "net/event_stream.h"

namespace gpulse::agent {
class AlertSender;
}

namespace gpulse::agent {

struct AgentOptions {
  std::string state_dir = "/var/lib/gpulse";
  std::int64_t checkpoint_ms = 300'000;  // history and job activity saved this often (agent clock)
  std::size_t history_limit_bytes = std::size_t{1} << 30;  // the bound of every watch together
  std::int64_t min_refresh_ms = 100;         // a scrape reuses a watched reading this fresh
  std::optional<double> simulated_clock_s;   // set: the simulated clock, starting there
  std::size_t max_query_points = 1'000'000;  // one history answer at most (about 100 MB of JSON)
  std::string version;
  // Changes (POST, PUT, DELETE) over TCP: only when its clients are authenticated (basic auth in
  // the web config) or the operator said so (--allow-tcp-writes); the unix socket always.
  bool tcp_writes = false;
  // Health, policies and configuration (docs/health.md).
  std::string alertmanager_url;            // "": violations are not sent to an Alertmanager
  std::string hostname;                    // the Hostname label of alerts and metrics
  bool health_in_health_endpoint = false;  // /health fails while a watched GPU's health fails
  bool allow_reset = false;                // a policy may reset a real GPU (as root, through sysfs)
  std::string procfs_root = "/proc";       // level-1 diagnostics: /proc/modules
  std::string dev_root = "/dev";           // level-1 diagnostics: /dev/nvidia*
  std::string sysfs_root = "/sys";         // a real GPU's reset
  // `gpulse inject` (simulated GPUs only): the kernel-log file the agent reads (--kmsg), where
  // injected Xids are written as the driver would; "" when it reads none or /dev/kmsg.
  std::string inject_kernel_log;
};

class Agent final : public exporter::Extension {
 public:
  // Opens the state database (refusing a foreign or corrupt one), loads groups, watches, jobs and
  // the spilled history, and starts the worker. `backend` must outlive the Agent and is read only
  // by its worker from now on.
  // Reads only: nothing is written until Start.
  static Result<std::unique_ptr<Agent>> Create(AgentOptions options, gpu::Backend& backend);
  // Notes the downtime on interrupted jobs, marks the agent running, starts the worker (ticks).
  // Call once the exporter has bound its address.
  Status Start();
  ~Agent() override;

  bool Handle(const net::HttpRequest& req, net::Respond& respond) override;
  std::shared_ptr<const exporter::Snapshot> Read(std::span<const FieldIndex> fields,
                                                 bool processes) override;
  // Called after the simulated clock is moved (POST /api/v1/clock).
  void SetStaleHook(std::function<void()> stale) override;

  // Stops the worker after the task in progress, saves history and activity, and records a clean
  // shutdown. Later Reads answer nullptr and later requests 503. Idempotent.
  void Shutdown();

  const std::string& database_path() const { return db_path_; }

 private:
  struct Job {
    JobRow row;
    Activity activity;
  };
  struct Reply {
    int status = 200;
    nlohmann::json body;
    std::string text;  // a non-JSON body (CSV) when set
    std::string content_type;
    std::shared_ptr<net::EventStream> stream;  // a streamed answer (policy listeners)
  };
  struct Route;

  Agent(AgentOptions options, gpu::Backend& backend);
  Status Load();
  void Post(std::function<void()> task);
  void Loop();
  std::optional<std::int64_t> NextDueMs() const;
  void RunDueTicks(std::int64_t until_ms);
  void Tick(std::int64_t interval_ms, std::int64_t t_ms);
  // Reads now, out of cadence, every cadence that covers an entity of the group (a job's start and
  // stop); a cadence that ticked at this very time already is not read twice.
  void SampleNow(int group_id);
  void NoteActivity(std::size_t pos, const Sample& s, std::int64_t t_ms);
  void MaybeCheckpoint();
  Status Checkpoint();
  Status Replan(const std::vector<WatchRow>& watches);
  std::shared_ptr<const exporter::Snapshot> ReadOnWorker(std::span<const FieldIndex> fields,
                                                         bool processes);
  std::vector<std::size_t> ActivityGpus(int group_id) const;

  // Health, policies, diagnostics and configuration (agent_manage.cc, agent_health.cc,
  // agent_policy.cc, agent_config.cc), on the worker.
  struct HealthWatch {
    unsigned systems = 0;
    std::int64_t update_ms = 1000;
    std::int64_t keep_age_s = 600;
  };
  struct PolicyState {
    health::PolicySpec spec;
    std::int64_t update_ms = 1000;
    std::map<std::size_t, health::PolicyWatcher> watchers;  // GPU position -> its watcher
  };
  struct ViolationRecord {
    std::uint64_t seq = 0;
    int group_id = 0;
    std::size_t pos = 0;  // the GPU's entity position
    health::Violation violation;
    nlohmann::json action;      // what the policy's action did
    nlohmann::json validation;  // the diagnostics after it, when asked for
  };
  struct Listener {
    int group_id = 0;
    std::shared_ptr<net::EventStream> stream;
  };
  Status LoadManagement();
  std::vector<WatchRow> ManagementWatches() const;
  void RefreshMonitors();
  void ObserveHealth(std::size_t pos, const Sample& s, std::int64_t t_ms);
  void ObserveReading(std::size_t pos, const health::GpuReading& r);
  void ObserveStrayXids(std::size_t pos, const std::vector<std::uint64_t>& xids, std::int64_t t_ms);
  // Keeps the GPU's recommended action from a read through the fault layer (docs/faults.md).
  void NoteAction(std::size_t pos, const Sample& s);
  nlohmann::json ActionJson(std::size_t pos) const;
  // Reads every GPU of the group now, so its recommended actions are current.
  void RefreshActions(int group_id);
  void RestoreSettings(const std::map<std::size_t, DeviceSettings>& before,
                       const nlohmann::json& applied);
  void Deliver(int group_id, std::size_t pos, health::Violation v);
  nlohmann::json ResetForPolicy(std::size_t pos);
  nlohmann::json ViolationJson(const ViolationRecord& r) const;
  nlohmann::json HealthJson(int group_id) const;
  nlohmann::json DiagJson(int group_id);
  nlohmann::json ConfigJson(int group_id);
  health::ConfigTarget TargetFor(std::size_t pos) const;
  nlohmann::json ApplyTargets(const std::vector<std::size_t>& gpus, bool* refused);
  std::vector<std::size_t> GroupGpus(int group_id) const;
  std::string ManagementExposition() const;
  std::string HealthFailure() const;
  Reply HealthRoute(const std::string& method, const std::vector<std::string>& path,
                    const std::map<std::string, std::string>& q, const nlohmann::json& body);
  Reply PolicyRoute(const std::string& method, const std::vector<std::string>& path,
                    const std::map<std::string, std::string>& q, const nlohmann::json& body);
  Reply DiagRoute(const nlohmann::json& body);
  Reply ConfigRoute(const std::string& method, const std::vector<std::string>& path,
                    const std::map<std::string, std::string>& q, const nlohmann::json& body);
  Status PutManagement(const std::string& kind, int group_id, const nlohmann::json& spec);
  Result<int> BodyGroup(const nlohmann::json& body) const;

  // The API (agent_api.cc), on the worker.
  Reply Serve(const net::HttpRequest& req);
  Reply Dispatch(const net::HttpRequest& req);
  Reply Status_() const;
  Reply ListGroups() const;
  Reply GroupInfo(int id) const;
  Reply CreateGroup(const nlohmann::json& body);
  Reply ChangeGroup(int id, const nlohmann::json& body);
  Reply DeleteGroup(int id);
  Reply ListWatches() const;
  Reply AddWatch(const nlohmann::json& body);
  Reply DeleteWatch(int id);
  Reply History(const std::map<std::string, std::string>& query) const;
  Reply ListJobs() const;
  Reply StartJob(const nlohmann::json& body);
  Reply StopJob(const std::string& id);
  Reply JobInfo(const std::string& id) const;
  Reply DeleteJob(const std::string& id);
  Reply EnableStats(const nlohmann::json& body);
  Reply ProcessInfo(unsigned pid, const std::map<std::string, std::string>& query) const;
  Reply AdvanceClock(const nlohmann::json& body);
  Reply Inject(const nlohmann::json& body);  // agent_inject.cc
  nlohmann::json GroupJson(int id) const;
  nlohmann::json WatchJson(const WatchRow& w) const;
  nlohmann::json JobJson(const Job& job) const;
  std::optional<int> FindGroup(int id) const;
  std::optional<std::string> RunningJobOn(
      int group_id) const;  // a running job's id  // index in groups_, or -1 for the default group

  const AgentOptions options_;
  gpu::Backend& backend_;
  std::vector<Entity> entities_;  // states change as GPUs are found lost (worker only)
  std::unique_ptr<StateDb> db_;
  std::string db_path_;
  AgentClock clock_;

  // Worker state.
  std::vector<GroupRow> groups_;
  std::vector<WatchRow> watches_;
  std::map<std::string, Job> jobs_;
  std::map<int, Activity> group_activity_;  // `stats -e`: the process watch of a group
  Plan plan_;
  HistoryStore history_;
  std::map<std::int64_t, std::int64_t> next_due_ms_;   // interval -> next tick (agent unix ms)
  std::map<std::int64_t, std::int64_t> last_tick_ms_;  // interval -> its last tick
  std::int64_t last_checkpoint_ms_ = 0;
  std::uint64_t ticks_ = 0, skipped_ticks_ = 0, checkpoints_ = 0;
  std::string last_checkpoint_error_;
  std::vector<std::string> load_notes_;
  std::string pending_note_;  // for every job that was running while the agent was down
  bool loaded_ = false, started_ = false;
  Sample scratch_;

  // Health, policies, configuration (worker only).
  std::map<int, HealthWatch> health_watches_;                         // group -> its watch
  std::map<std::size_t, health::HealthMonitor> monitors_;             // GPU position -> monitor
  std::map<int, PolicyState> policies_;                               // group -> its policy
  std::vector<std::pair<int, health::ConfigTarget>> config_targets_;  // oldest set first
  std::deque<ViolationRecord> violations_;                            // the newest kMaxViolations
  std::uint64_t violation_seq_ = 0;
  std::map<std::pair<std::size_t, unsigned>, std::uint64_t> violation_counts_;  // (pos, cond)
  std::vector<Listener> listeners_;
  std::map<std::size_t, std::int64_t> last_reset_ms_;  // GPU position -> its last policy reset
  std::map<std::size_t, XidAction> actions_;  // GPU position -> its last recommended action
  std::uint64_t listener_dropped_ = 0;
  std::unique_ptr<AlertSender> alerts_;

  std::mutex mu_;  // guards queue_, stopping_
  std::mutex stale_mu_;  // guards stale_hook_
  std::function<void()> stale_hook_;  // the exporter's: its snapshot is out of date
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  bool stopped_ = false;  // worker side: Shutdown completed
  std::thread worker_;    // last
};

}  // namespace gpulse::agent
