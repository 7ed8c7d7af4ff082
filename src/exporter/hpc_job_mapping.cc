#include "exporter/hpc_job_mapping.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/fields.h"
#include "prom/writer.h"
#include "sys/fd.h"

namespace gpulse::exporter {
namespace {

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string Errno(int err) { return std::strerror(err); }

// The file `name` of the directory `dir_fd`: its content, nullopt when there is none to read
// (missing, or a directory), or a failure.
struct FileRead {
  std::optional<std::string> content;
  std::optional<std::string> failure;
};

FileRead ReadOne(int dir_fd, const std::string& name, std::size_t max_bytes, std::string& buf) {
  FileRead r;
  // Without blocking: a FIFO planted under a GPU's name must not stall the reader (it is refused
  // below, as is any other file that is not a regular one).
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return r;  // no file: unlabelled, as in dcgm-exporter
    r.failure = Errno(errno);
    return r;
  }
  sys::Fd file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    r.failure = Errno(errno);
    return r;
  }
  if (S_ISDIR(st.st_mode)) return r;  // dcgm-exporter skips subdirectories
  if (!S_ISREG(st.st_mode)) {
    r.failure = "not a regular file";
    return r;
  }
  const std::string too_large = fmt::format("larger than {} bytes", max_bytes);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    r.failure = too_large;
    return r;
  }
  // Up to one byte more than allowed: a file that grew since fstat is caught too.
  buf.resize(max_bytes + 1);
  std::size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.failure = Errno(errno);
      return r;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > max_bytes) {
    r.failure = too_large;
    return r;
  }
  r.content.emplace(buf.data(), got);
  return r;
}

}  // namespace

bool IsJobMappingFileName(std::string_view name) {
  const std::size_t dot = name.find('.');
  if (dot == std::string_view::npos) return AllDigits(name);
  return AllDigits(name.substr(0, dot)) && AllDigits(name.substr(dot + 1));
}

std::optional<std::string> JobMappingFileName(const Entity& e) {
  switch (e.kind) {
    case EntityKind::kGpu:
      return std::to_string(e.gpu);
    case EntityKind::kGpuInstance:
      if (!e.gpu_instance_id) return std::nullopt;
      return fmt::format("{}.{}", e.gpu, *e.gpu_instance_id);
    case EntityKind::kComputeInstance:
      return std::nullopt;
  }
  return std::nullopt;
}

Result<std::vector<std::string>> ParseJobMappingFile(std::string_view content,
                                                     std::size_t max_jobs) {
  std::vector<std::string> jobs;
  std::set<std::string_view> seen;
  std::size_t pos = 0;
  while (pos < content.size()) {  // a trailing newline starts no line: it adds no entry
    std::size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    if (line.ends_with('\r')) line.remove_suffix(1);  // one final \r, as bufio.ScanLines drops it
    pos = end + 1;
    if (!seen.insert(line).second) continue;
    if (jobs.size() == max_jobs) {
      return InvalidArgument(fmt::format("more than {} jobs", max_jobs));
    }
    jobs.emplace_back(line);
  }
  return jobs;
}

JobMappingRead ReadJobMappingDir(const std::string& dir, const std::vector<Entity>& entities,
                                 std::size_t max_file_bytes, std::size_t max_jobs) {
  JobMappingRead out;
  out.labels.resize(entities.size());
  // O_PATH: looking names up needs the directory's search permission only, not its listing.
  const int dir_fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) out.failures.push_back({"", Errno(errno)});
    return out;
  }
  sys::Fd dir_file(dir_fd);
  out.dir_present = true;
  std::string buf;
  for (std::size_t i = 0; i < entities.size(); ++i) {
    if (!entities[i].readable()) continue;
    std::optional<std::string> name = JobMappingFileName(entities[i]);
    if (!name) continue;
    FileRead r = ReadOne(dir_fd, *name, max_file_bytes, buf);
    if (r.failure) {
      out.failures.push_back({*name, *r.failure});
      continue;
    }
    if (!r.content) continue;
    auto jobs = ParseJobMappingFile(*r.content, max_jobs);
    if (!jobs) {
      out.failures.push_back({*name, jobs.error().message});
      continue;
    }
    // Rendered once per read; two ids that render alike (invalid UTF-8 replaced) count once.
    std::vector<std::string>& labels = out.labels[i];
    for (const std::string& job : *jobs) {
      prom::Label l{"hpc_job", job};
      std::string rendered = prom::RenderLabels({&l, 1});
      if (std::find(labels.begin(), labels.end(), rendered) == labels.end()) {
        labels.push_back(std::move(rendered));
      }
    }
  }
  return out;
}

JobMapping::JobMapping(std::string dir, std::vector<Entity> entities, Log log)
    : dir_(std::move(dir)), entities_(std::move(entities)), log_(std::move(log)) {}

Status CheckJobMappingDir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return InvalidArgument(
        fmt::format("--hpc-job-mapping-dir / $DCGM_HPC_JOB_MAPPING_DIR {}: {}", dir, Errno(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgument(
        fmt::format("--hpc-job-mapping-dir / $DCGM_HPC_JOB_MAPPING_DIR {}: not a directory", dir));
  }
  return Status::Ok();
}

Status JobMapping::Check() {
  if (Status s = CheckJobMappingDir(dir_); !s.ok()) return s;
  struct stat st {};
  dir_present_ = ::stat(dir_.c_str(), &st) == 0;
  if (!*dir_present_) {
    log_(fmt::format(
        "--hpc-job-mapping-dir {}: no such directory (yet); series carry no hpc_job label until "
        "it exists",
        dir_));
  }
  return Status::Ok();
}

std::shared_ptr<const Snapshot> JobMapping::Apply(std::shared_ptr<const Snapshot> snap) {
  if (snap == nullptr) return snap;
  JobMappingRead r = ReadJobMappingDir(dir_, entities_);
  if (dir_present_ && *dir_present_ != r.dir_present) {
    log_(r.dir_present
             ? fmt::format("--hpc-job-mapping-dir {}: the directory is there: labelling series "
                           "with its jobs",
                           dir_)
             : fmt::format("--hpc-job-mapping-dir {}: the directory is gone; series carry no "
                           "hpc_job label until it is back",
                           dir_));
  }
  dir_present_ = r.dir_present;
  failures_total_ += r.failures.size();
  std::map<std::string, std::string> failing;
  for (JobMappingFailure& f : r.failures) {
    auto said = failing_.find(f.file);
    if (said == failing_.end() || said->second != f.reason) {
      log_(f.file.empty()
               ? fmt::format("--hpc-job-mapping-dir {}: {}; series carry no hpc_job label", dir_,
                             f.reason)
               : fmt::format("--hpc-job-mapping-dir {}/{}: {}; that GPU's series carry no hpc_job "
                             "label (said once; counted in {})",
                             dir_, f.file, f.reason,
                             SelfMetricAt(SelfMetric::kJobMappingFailures).name));
    }
    failing.emplace(std::move(f.file), std::move(f.reason));
  }
  failing_ = std::move(failing);  // a file that recovered is said again when it fails again
  std::shared_ptr<Snapshot> out = snap.use_count() == 1 ? std::const_pointer_cast<Snapshot>(snap)
                                                        : std::make_shared<Snapshot>(*snap);
  out->job_labels = std::move(r.labels);
  out->job_mapping = JobMappingStatus{r.dir_present, failures_total_};
  return out;
}

}  // namespace gpulse::exporter
