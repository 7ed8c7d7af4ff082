// The agent's state database (docs/agent.md, "Database"): one SQLite file in the state directory,
// in WAL mode with synchronous=FULL, so every change this class reports done is on disk before the
// agent acknowledges it, and survives kill -9 (and a power cut).
//
// Open refuses, never overwrites: a file that is not SQLite, an SQLite database of another program
// (its application_id is not gpulse's), one written by a newer gpulse (user_version above
// kSchemaVersion), one that fails PRAGMA quick_check, and a state directory another agent holds
// (an exclusive lock on `agent.lock` beside the database). Each message names the file and the
// problem.
//
// Thread-compatible: the agent serialises calls (one connection, one thread at a time).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpulse::agent {

inline constexpr std::uint32_t kApplicationId = 0x67706c73;  // "gpls"
inline constexpr int kSchemaVersion = 2;  // 2: the management table (health, policy, config)
inline constexpr const char* kDatabaseFile = "agent.db";
inline constexpr const char* kLockFile = "agent.lock";

struct GroupRow {
  int id = 0;  // user groups start at 2 (DCGM's numbering; 0 is the default group of all GPUs)
  std::string name;
  std::vector<std::string>
      entities;  // entity keys ("gpu:0", "gpu:0/gi:1", ...), in the order added
  std::int64_t created_unix_ns = 0;
};

struct WatchRow {
  int id = 0;
  int group_id = 0;
  std::vector<int> field_ids;   // DCGM field ids
  std::int64_t update_ms = 0;   // DCGM updateFreq
  std::int64_t keep_age_s = 0;  // DCGM maxKeepAge
  std::int64_t created_unix_ns = 0;
};

struct JobRow {
  std::string id;  // the job name given to `stats -s`
  int group_id = 0;
  std::int64_t start_unix_ns = 0;
  std::optional<std::int64_t> stop_unix_ns;  // absent while running
  std::string
      stats_json;  // the derived statistics (docs/schema/agent-job.schema.json); "" while running
  std::vector<std::string> notes;  // e.g. "the agent was down from T1 to T2: no samples then"
};

// A group's health watch, policy or configuration target (docs/health.md): its JSON, as the API
// takes it, under (kind, group).
struct ManagementRow {
  std::string kind;  // "health", "policy" or "config"
  int group_id = 0;
  std::string spec;  // JSON
  std::int64_t updated_unix_ns = 0;
};

// A spilled history series: one entity's field, as Series::Serialize wrote it.
struct HistoryBlob {
  std::string entity;  // entity key
  int field_id = 0;
  std::string image;
};

class StateDb {
 public:
  // Opens (or creates, with the directory, mode 0750) the database in `state_dir`.
  static Result<std::unique_ptr<StateDb>> Open(const std::string& state_dir);
  ~StateDb();
  StateDb(const StateDb&) = delete;
  StateDb& operator=(const StateDb&) = delete;

  std::string path() const;  // the database file

  // Groups. CreateGroup picks the next id (>= 2, never reused) and fails on a duplicate name.
  Result<GroupRow> CreateGroup(const std::string& name, std::int64_t now_unix_ns);
  Result<std::vector<GroupRow>> Groups();
  Status SetGroupEntities(int group_id, const std::vector<std::string>& entities);
  Status DeleteGroup(int group_id);  // with its watches; NotFound when absent

  // Watches. AddWatch picks the next id (>= 1, never reused).
  Result<WatchRow> AddWatch(const WatchRow& watch);
  Result<std::vector<WatchRow>> Watches();
  Status DeleteWatch(int watch_id);

  // Jobs. StartJob fails (InvalidArgument) when a job of that id exists; StopJob when it does not
  // run. PutJob replaces a job's row (stats, notes).
  Status StartJob(const JobRow& job);
  Status PutJob(const JobRow& job);
  Result<std::optional<JobRow>> Job(const std::string& id);
  Result<std::vector<JobRow>> Jobs();
  Status DeleteJob(const std::string& id);

  // History: SaveHistory replaces every stored series with `blobs` in one transaction. The
  // streaming form takes the blobs one at a time from `next` (nullopt: no more), so a large
  // history is never held twice.
  Status SaveHistory(const std::vector<HistoryBlob>& blobs);
  Status SaveHistory(const std::function<std::optional<HistoryBlob>()>& next);
  Result<std::vector<HistoryBlob>> LoadHistory();

  // Health watches, policies and configuration targets: one row per kind and group. Put replaces
  // the row; Delete answers NotFound when there is none.
  Status PutManagement(const ManagementRow& row);
  Status DeleteManagement(const std::string& kind, int group_id);
  Result<std::vector<ManagementRow>> Management();

  // Small named values (the last clean shutdown time, the agent's identity).
  Status PutMeta(const std::string& key, const std::string& value);
  Result<std::optional<std::string>> Meta(const std::string& key);

  struct Impl;

 private:
  explicit StateDb(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulse::agent
