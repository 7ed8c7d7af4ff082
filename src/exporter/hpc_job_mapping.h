// dcgm-exporter's HPC job mapping (--hpc-job-mapping-dir, $DCGM_HPC_JOB_MAPPING_DIR): a Slurm
// prolog writes, in a directory, one file per GPU it hands to a job, named by the GPU's index
// (`0`) or, for a MIG GPU instance, `<gpu index>.<GPU instance id>` (`2.0`), holding the job ids
// that use it, one per line; the epilog removes or rewrites it. Each series of a GPU or instance
// with N jobs goes out N times, identical but for `hpc_job="JOB"` (docs/exporter.md, "Slurm
// jobs"). gpulse's other source of the same label, --slurm-jobs (hpc_jobs.h), reads the processes'
// cgroups instead; the two are not combined.
//
// The format, as dcgm-exporter reads it (its internal/pkg/transformation/hpc.go):
// - only names matching ^\d+(\.\d+)?$ are read, and a name is compared as a string with the `gpu`
//   label's decimal value (so `00` matches nothing); other names and subdirectories are ignored;
// - a line is a job id; a trailing newline adds no entry, a final `\r` of a line is dropped,
//   nothing else is trimmed; an empty line is the job "" (series with hpc_job="");
// - a 0-byte file, like a missing one, leaves that GPU's series unlabelled;
// - a plain `N` file labels GPU N's own series, not the series of its MIG instances.
// The directory is looked at again at every device read (no file watching).
//
// Where gpulse differs, on purpose: instead of listing the directory, it opens only the names
// that can match (one per GPU and GPU instance it reads), so a directory full of other files
// costs nothing; a file that cannot be used (unreadable, not a regular file, over
// kMaxJobFileBytes, over kMaxJobsPerFile jobs) leaves that GPU's series unlabelled, is counted
// (gpulse_hpc_job_mapping_failures_total) and said once on stderr, where dcgm-exporter answers the
// whole scrape with HTTP 500; a job id repeated in one file counts once (dcgm-exporter writes the
// series twice, which Prometheus rejects as duplicates).
//
// Thread-safety: the free functions are pure (ReadJobMappingDir reads the file system);
// JobMapping is used by one thread at a time (the exporter's probe thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/entity.h"
#include "core/result.h"
#include "exporter/snapshot.h"

namespace gpulse::exporter {

// Bounds on what one read of the directory can cost. 64 KiB is the line limit of Go's
// bufio.Scanner, with which dcgm-exporter reads a file (a longer line fails there too).
inline constexpr std::size_t kMaxJobFileBytes = 64 * 1024;
inline constexpr std::size_t kMaxJobsPerFile = 128;

// Whether dcgm-exporter reads a file of this name: ^\d+(\.\d+)?$ (ASCII digits).
bool IsJobMappingFileName(std::string_view name);

// The file naming an entity: "N" for a GPU, "N.G" for a MIG GPU instance (N its GPU's index, G its
// GPU instance id); nullopt for a compute instance or an instance whose id is unknown.
std::optional<std::string> JobMappingFileName(const Entity& e);

// The job ids of a file's content, in file order, as dcgm-exporter splits it (above). Errors
// (InvalidArgument) when it has more than `max_jobs` distinct jobs.
Result<std::vector<std::string>> ParseJobMappingFile(std::string_view content,
                                                     std::size_t max_jobs = kMaxJobsPerFile);

struct JobMappingFailure {
  std::string file;    // the file's name in the directory ("2.0"), or "" for the directory
  std::string reason;  // e.g. "Permission denied", "larger than 65536 bytes"
};

struct JobMappingRead {
  bool dir_present = false;
  // Parallel to the entities: the rendered `hpc_job="…"` of each job, distinct, in file order;
  // empty where no file, an empty file, or a failure.
  std::vector<std::vector<std::string>> labels;
  std::vector<JobMappingFailure> failures;
};

// Reads the files of `dir` naming the readable entities (present GPUs and GPU instances).
JobMappingRead ReadJobMappingDir(const std::string& dir, const std::vector<Entity>& entities,
                                 std::size_t max_file_bytes = kMaxJobFileBytes,
                                 std::size_t max_jobs = kMaxJobsPerFile);

// At start: InvalidArgument when `dir` exists and is not a directory, or cannot be looked at
// (permission); Ok when it is a directory or does not exist (it may come later).
Status CheckJobMappingDir(const std::string& dir);

// What the exporter keeps between reads: the failure count and what it has already said.
class JobMapping {
 public:
  using Log = std::function<void(const std::string&)>;
  JobMapping(std::string dir, std::vector<Entity> entities, Log log);

  // At start: says so when the directory is missing (the series stay unlabelled until it comes).
  // InvalidArgument when the path exists and is not a directory, or cannot be looked at.
  Status Check();

  // Reads the directory and returns `snap` with its job labels and the mapping's state (copied
  // when someone else holds it). Says each new failure, and the directory's coming and going, once.
  std::shared_ptr<const Snapshot> Apply(std::shared_ptr<const Snapshot> snap);

  std::uint64_t failures_total() const { return failures_total_; }

 private:
  std::string dir_;
  std::vector<Entity> entities_;
  Log log_;
  std::uint64_t failures_total_ = 0;
  std::optional<bool> dir_present_;             // as last seen (nullopt: not looked yet)
  std::map<std::string, std::string> failing_;  // file -> the reason said for it
};

}  // namespace gpulse::exporter
