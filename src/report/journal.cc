#include "report/journal.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/json_limits.h"
#include "report/run_json.h"
#include "report/run_json_parts.h"

namespace gpulse::report {
namespace {

using ojson = nlohmann::ordered_json;

// One record line: a snapshot of 8 GPUs' processes is a few KiB; this leaves room for thousands.
constexpr JsonLimits kJournalLineLimits{16u << 20, 16, 1'000'000};

template <std::size_t N>
void Lit(fmt::memory_buffer& b, const char (&text)[N]) {
  b.append(text, text + N - 1);
}

void AppendLine(fmt::memory_buffer& b, std::string_view key, const std::string& value) {
  b.push_back('{');
  b.push_back('"');
  b.append(key);
  Lit(b, "\":");
  b.append(value);
  Lit(b, "}\n");
}

}  // namespace

Result<std::unique_ptr<JournalWriter>> JournalWriter::Create(const sys::Dir& dir, std::string_view name,
                                                             std::int64_t flush_period_ns) {
  auto fd = dir.OpenFile(name, sys::OpenMode::kCreateNew);
  if (!fd) return fd.error();
  return std::unique_ptr<JournalWriter>(
      new JournalWriter(std::move(fd).value(), dir, std::string(name), flush_period_ns));
}

JournalWriter::JournalWriter(sys::UniqueFd fd, sys::Dir dir, std::string name, std::int64_t flush_period_ns)
    : fd_(std::move(fd)), dir_(std::move(dir)), name_(std::move(name)), path_(dir_.PathOf(name_)),
      flush_period_ns_(flush_period_ns) {
  thread_ = std::thread([this] { WriterLoop(); });
}

JournalWriter::~JournalWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void JournalWriter::Begin(const Run& run) {
  ojson header{{"gpulse_journal", kJournalVersion},
               {"schema_version", kRunSchemaVersion},
               {"run", RunInfoJson(run.info)},
               {"devices", DevicesJson(run.devices)},
               {"entities", EntitiesJson(run.entities, run.info.start_unix_ns)},
               {"clock_ticks_per_second", run.clock_ticks_per_second}};
  std::string line = header.dump();
  local_.append(line);
  local_.push_back('\n');
  last_entities_ = header["entities"].dump();
  HandOff();  // the header is on disk before the first sample
}

void JournalWriter::Snapshots(const Run& run) {
  auto snapshot = [&](std::string_view key, const ojson& value, std::string& last) {
    std::string text = value.dump();
    if (text == last) return;
    AppendLine(local_, key, text);
    last = std::move(text);
  };
  snapshot("processes", GpuProcessesJson(run.gpu_processes), last_processes_);
  snapshot("entities", EntitiesJson(run.entities, run.info.start_unix_ns), last_entities_);
  snapshot("absent", AbsenceListJson(run.absences), last_absent_);
}

// {"KEY":SAMPLE}\n per new sample, remembering where SAMPLE lies in the file.
template <typename Sample, typename AppendFn>
void JournalWriter::AppendSamples(std::string_view key, const std::deque<Sample>& samples, std::size_t& done,
                                  std::vector<Span>& spans, AppendFn append) {
  for (; done < samples.size(); ++done) {
    local_.push_back('{');
    local_.push_back('"');
    local_.append(key);
    Lit(local_, "\":");
    std::size_t begin = local_.size();
    append(local_, samples[done]);
    spans.push_back((handed_bytes_ + begin) << kLengthBits | (local_.size() - begin));
    Lit(local_, "}\n");
  }
}

void JournalWriter::Update(const Run& run) {
  AppendSamples("resource", run.resource_samples, resource_n_, resource_spans_, AppendResourceSampleJson);
  AppendSamples("gpu", run.gpu_samples, gpu_n_, gpu_spans_, AppendGpuSampleJson);
  AppendSamples("instance", run.instance_samples, instance_n_, instance_spans_, AppendInstanceSampleJson);
  for (; xid_n_ < run.xid_events.size(); ++xid_n_) AppendLine(local_, "xid", XidJson(run.xid_events[xid_n_]).dump());
  std::int64_t now = MonotonicNowNs();
  if (now - last_handoff_ns_ < flush_period_ns_) return;
  Snapshots(run);  // once a flush period: a few hundred bytes, compared as text
  HandOff();
}

void JournalWriter::HandOff() {
  last_handoff_ns_ = MonotonicNowNs();
  if (local_.size() == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.append(local_.data(), local_.size());
  }
  handed_bytes_ += local_.size();
  local_.clear();
  cv_.notify_one();
}

Status JournalWriter::Finish(const Run& run) {
  Update(run);
  Snapshots(run);
  AppendLine(local_, "end", RunInfoJson(run.info).dump());
  HandOff();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (error_) return *error_;
  return Status::Ok();
}

std::optional<Error> JournalWriter::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

// Writes what was handed off, then fdatasync: a flushed line survives the recorder's death (the
// write) and the machine's (the sync). After the first error the journal stops growing; the run
// itself goes on in memory and the error is reported at the end.
void JournalWriter::WriterLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !ready_.empty(); });
    std::string chunk;
    chunk.swap(ready_);
    bool stopping = stop_;
    bool failed = error_.has_value();
    lock.unlock();
    std::optional<Error> err;
    if (!chunk.empty() && !failed) {
      Status st = sys::WriteAllTo(fd_->get(), chunk, path_);
      if (st.ok() && ::fdatasync(fd_->get()) != 0) {
        st = Error{ErrorCode::kIo, path_ + ": fdatasync failed: " + std::strerror(errno)};
      }
      if (!st.ok()) err = st.error();
    }
    lock.lock();
    if (err && !error_) error_ = err;
    if (stopping && ready_.empty()) return;
  }
}

JournalWriter::Mapped::~Mapped() {
  if (base != nullptr) ::munmap(const_cast<char*>(base), size);
}

std::unique_ptr<JournalWriter::Mapped> JournalWriter::Map() const {
  if (error() || thread_.joinable() || handed_bytes_ == 0) return nullptr;  // failed, or not finished
  int fd = ::openat(dir_.fd(), name_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) == handed_bytes_) {
    p = ::mmap(nullptr, handed_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  auto m = std::make_unique<Mapped>();
  m->base = static_cast<const char*>(p);
  m->size = handed_bytes_;
  // Each view must still be an object where the writer put it; anything else and run.json formats.
  auto views = [&](const std::vector<Span>& spans, std::vector<std::string_view>& out) {
    out.reserve(spans.size());
    for (Span sp : spans) {
      std::uint64_t offset = sp >> kLengthBits, length = sp & ((1u << kLengthBits) - 1);
      if (offset + length > m->size || length < 2) return false;
      std::string_view v(m->base + offset, length);
      if (v.front() != '{' || v.back() != '}') return false;
      out.push_back(v);
    }
    return true;
  };
  if (!views(resource_spans_, m->timelines.resource) || !views(instance_spans_, m->timelines.instance) ||
      !views(gpu_spans_, m->timelines.gpu)) {
    return nullptr;
  }
  return m;
}

bool LooksLikeJournal(std::string_view text) { return text.starts_with("{\"gpulse_journal\":"); }

namespace {

// Applies one record line to the run; throws on a line that is not a record.
void ApplyRecord(const nlohmann::json& j, Run& run, bool& ended) {
  if (!j.is_object() || j.size() != 1) throw std::runtime_error("not a journal record");
  // The one member (items()'s proxy is a temporary: take the key and value from an iterator).
  auto member = j.begin();
  const std::string& key = member.key();
  const nlohmann::json& value = member.value();
  if (key == "gpu") {
    run.gpu_samples.push_back(ParseGpuSampleJson(value));
  } else if (key == "resource") {
    run.resource_samples.push_back(ParseResourceSampleJson(value));
  } else if (key == "instance") {
    run.instance_samples.push_back(ParseInstanceSampleJson(value));
  } else if (key == "xid") {
    run.xid_events.push_back(ParseXidJson(value));
  } else if (key == "processes") {
    run.gpu_processes = ParseGpuProcesses(value);
  } else if (key == "entities") {
    run.entities = ParseEntitiesJson(value);
  } else if (key == "absent") {
    run.absences = ParseAbsenceListJson(value);
  } else if (key == "end") {
    run.info = ParseRunInfoJson(value);
    ended = true;
  } else {
    throw std::runtime_error("unknown record \"" + key + "\"");
  }
}

std::int64_t LastSampleNs(const Run& run) {
  std::int64_t t = 0;
  if (!run.gpu_samples.empty()) t = std::max(t, run.gpu_samples.back().elapsed_ns);
  if (!run.resource_samples.empty()) t = std::max(t, run.resource_samples.back().elapsed_ns);
  if (!run.instance_samples.empty()) t = std::max(t, run.instance_samples.back().elapsed_ns);
  return t;
}

}  // namespace

Result<Run> RecoverRun(std::string_view text, const std::string& origin) {
  if (!LooksLikeJournal(text)) return InvalidArgument(origin + ": not a gpulse run journal (no header line)");
  Run run;
  bool ended = false;
  std::size_t line_no = 0;
  bool torn = false;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    ++line_no;
    if (nl == std::string_view::npos) {  // no newline: the writer died inside this line
      torn = true;
      break;
    }
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (auto why = CheckJsonShape(line, kJournalLineLimits)) {
      return InvalidArgument(fmt::format("{}: line {}: not read: {}", origin, line_no, *why));
    }
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      if (line_no == 1) {
        int version = JsonGet<int>(j.at("gpulse_journal"));
        if (version != kJournalVersion) throw std::runtime_error("unsupported journal version " + std::to_string(version));
        run.info = ParseRunInfoJson(j.at("run"));
        for (const auto& d : j.at("devices")) run.devices.push_back(ParseDeviceJson(d));
        run.entities = ParseEntitiesJson(j.at("entities"));
        run.clock_ticks_per_second = JsonGet<long>(j.at("clock_ticks_per_second"));
      } else {
        ApplyRecord(j, run, ended);
      }
    } catch (const std::exception& e) {
      return InvalidArgument(fmt::format("{}: line {}: {}", origin, line_no, e.what()));
    }
  }
  if (line_no <= 1 && torn) return InvalidArgument(origin + ": the header line is incomplete");
  if (!ended) {
    std::int64_t last = LastSampleNs(run);
    run.info.complete = false;
    run.info.incomplete_reason = fmt::format(
        "recovered from {}: the recorder stopped before the run ended (killed, crashed or the machine "
        "went down); the samples flushed up to {:.3f} s are kept{}",
        origin, last / 1e9, torn ? ", a torn last line was dropped" : "");
    run.info.duration_ns = last;
    run.info.end_unix_ns = run.info.start_unix_ns + last;
  }
  return run;
}

}  // namespace gpulse::report
