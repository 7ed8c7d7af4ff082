// Job and process statistics (`gpulse stats`, like `dcgmi stats -v`): what a job's GPUs did
// between its start and stop, derived by the same code as `gpulse record`'s job statistics
// (report::Derive) from the agent's history, plus the processes and XID errors the agent saw on
// those GPUs meanwhile (docs/agent.md, "Job statistics").
//
// Thread-compatible: the agent's worker thread only.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/history.h"
#include "core/device.h"
#include "core/entity.h"

namespace gpulse::agent {

// The fields a job needs watched: those the record timeline reads (sampling::ToGpuSample), and XID.
std::vector<FieldIndex> JobFields();

struct ProcessUse {
  unsigned gpu = 0;
  unsigned pid = 0;
  std::int64_t first_seen_unix_ns = 0;
  std::int64_t last_seen_unix_ns = 0;
  std::optional<std::uint64_t> max_memory_bytes;
  double sm_util_sum = 0, mem_util_sum = 0;
  std::uint64_t sm_util_samples = 0, mem_util_samples = 0;
  std::optional<unsigned> gpu_instance_id, compute_instance_id;
  bool compute = false, graphics = false;  // in the driver's compute / graphics process list
};

struct XidSeen {
  std::int64_t unix_ns = 0;
  unsigned gpu = 0;
  std::uint64_t xid = 0;
};

// What a running job (or the process watch of a group) collects besides the history: processes
// seen on its GPUs and XID errors. Saved with every checkpoint, so a restart keeps it.
struct Activity {
  std::map<std::pair<unsigned, unsigned>, ProcessUse> processes;  // (gpu, pid)
  std::vector<XidSeen> xids;

  void NoteProcesses(unsigned gpu, const ProcessList& list, std::int64_t now_unix_ns);
  void NoteXids(unsigned gpu, const std::vector<std::uint64_t>& xids, std::int64_t now_unix_ns);
  // Keeps the newest `max` processes (a long-lived group watch must stay bounded).
  void Trim(std::size_t max);
  nlohmann::json ToJson() const;
  static Activity FromJson(const nlohmann::json& j);
};

struct StatsWindow {
  std::int64_t start_unix_ns = 0;
  std::int64_t end_unix_ns = 0;      // now, for a running job
  std::vector<std::size_t> gpus;     // entity positions (GPUs)
  // Process statistics: that process's rows only, and the other processes seen on its GPUs
  // meanwhile as its conflicting processes (`activity` then holds every process).
  std::optional<unsigned> only_pid;
};

// The statistics document of docs/schema/agent-job.schema.json's `gpus` array: one entry per GPU,
// run.json's job_statistics entry plus the window, sample count, energy in joules, the processes
// with their memory utilization, and an overall health verdict.
nlohmann::json DeriveStats(const StatsWindow& w, const HistoryStore& history,
                           const std::vector<Entity>& entities, const SystemInfo& info,
                           const Activity& activity);

}  // namespace gpulse::agent
