#include "power/rules/windows.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/utf8.h"
#include "power/readers/contract.h"
#include "power/readers/samples_row.h"
#include "power/rules/coverage_rules.h"
#include "power/rules/reasons.h"
#include "sys/safe_dir.h"

namespace gpulse::power {
namespace fs = std::filesystem;
namespace {

void AddReason(std::vector<std::string>& list, std::string_view r) {
  if (std::find(list.begin(), list.end(), r) == list.end()) list.emplace_back(r);
}

const Json& Get(const Json& doc, const char* key) {
  static const Json kNull;
  auto it = doc.find(key);
  return it == doc.end() ? kNull : *it;
}

// Names that are not valid UTF-8 are shown with '?' so the JSON outputs stay valid.
std::string SafeName(const std::string& name) {
  if (IsValidUtf8(name)) return name;
  std::string out;
  for (unsigned char c : name) out.push_back(c < 0x80 ? static_cast<char>(c) : '?');
  return out;
}

bool IsUnder(const fs::path& path, const fs::path& root) {
  auto p = path.begin();
  for (auto r = root.begin(); r != root.end(); ++r, ++p) {
    if (r->empty()) continue;  // trailing separator
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

}  // namespace

bool StatusInvariantsHold(const WindowFile& w) {
  bool bounded = w.end && w.duration && *w.duration > 0;
  bool open = !w.end && !w.duration;
  bool has_reason = w.reason && !w.reason->empty();
  if (w.status == "running") return open && !w.reason;
  if (w.status == "interrupted") return open && has_reason;
  if (w.status == "completed") return bounded && !w.reason;
  if (w.status == "failed") return bounded && has_reason;
  return false;
}

Result<WindowFile> ParseWindowFields(const Json& doc, const std::string& rel_path) {
  if (!doc.is_object()) return InvalidArgument("top level is not an object");
  WindowFile w;
  w.rel_path = rel_path;
  w.stem = fs::path(rel_path).stem().string();
  auto schema = AsStrictInt(Get(doc, "schema_version"));
  if (!schema || *schema != kSchemaVersion)
    return InvalidArgument("schema_version is not the integer 1");
  if (!Get(doc, "benchmark_type").is_string())
    return InvalidArgument("benchmark_type is not a string");
  w.key.benchmark_type = Get(doc, "benchmark_type").get<std::string>();
  auto conc = AsStrictInt(Get(doc, "concurrency"));
  if (!conc) return InvalidArgument("concurrency is not an integer");
  w.key.concurrency = *conc;
  const Json& clock = Get(doc, "clock_source");
  if (!clock.is_string() || clock.get<std::string>() != kClockSource)
    return InvalidArgument("clock_source is not head_node_unix_clock");
  const Json& status = Get(doc, "status");
  if (!status.is_string()) return InvalidArgument("status is not a string");
  w.status = status.get<std::string>();
  if (w.status != "running" && w.status != "interrupted" && w.status != "completed" &&
      w.status != "failed")
    return InvalidArgument("status is not running, interrupted, completed or failed");
  auto start = AsFiniteNumber(Get(doc, "benchmark_start_time_unix"));
  if (!start) return InvalidArgument("benchmark_start_time_unix is not a finite number");
  w.start = *start;
  for (auto [key, slot] :
       {std::pair{"benchmark_end_time_unix", &w.end}, std::pair{"duration", &w.duration}}) {
    const Json& v = Get(doc, key);
    if (v.is_null()) continue;
    if (!IsFiniteNumber(v))
      return InvalidArgument(std::string(key) + " is not null or a finite number");
    *slot = v.get<double>();
  }
  const Json& reason = Get(doc, "reason");
  if (!reason.is_null()) {
    if (!reason.is_string()) return InvalidArgument("reason is not null or a string");
    w.reason = reason.get<std::string>();
  }
  w.result_path = Get(doc, "result_path");
  return w;
}

Result<WindowFile> ParseWindowFile(const Json& doc, const std::string& rel_path) {
  auto w = ParseWindowFields(doc, rel_path);
  if (w.ok() && !StatusInvariantsHold(*w))
    return InvalidArgument("status invariants of '" + w->status + "' do not hold");
  return w;
}

bool ResultPathValid(const WindowFile& w, const std::optional<fs::path>& result_root) {
  if (!w.result_path.is_string()) return false;
  const auto& text = w.result_path.get_ref<const std::string&>();
  if (!IsSafeRelativeSubpath(text) || text.find('\0') != std::string::npos) return false;
  fs::path rel(text);
  if (rel.stem().string() != w.stem) return false;
  if (!result_root) return true;
  std::error_code ec;
  fs::path root = fs::weakly_canonical(*result_root, ec);
  if (ec) return false;
  fs::path target = fs::weakly_canonical(*result_root / rel, ec);
  return !ec && IsUnder(target, root);
}

WindowsScan ScanWindowsDir(const fs::path& power_dir, const std::optional<fs::path>& result_root) {
  WindowsScan out;
  const std::string dir_rel(kWindowsDir);
  fs::path dir = power_dir / kWindowsDir;
  std::error_code ec;
  auto lst = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(lst)) return out;  // no windows at all: every expected window is missing
  auto bad = [&out](const std::string& path) {
    out.errors.push_back({path, {std::string(reason::kWindowArtifactPathInvalid)}});
  };
  if (fs::is_symlink(lst)) {  // a symlinked windows/ could point anywhere: refuse it
    bad(dir_rel);
    return out;
  }
  fs::path real_dir = fs::weakly_canonical(dir, ec);
  fs::path real_power = fs::weakly_canonical(power_dir, ec);
  if (ec || !IsUnder(real_dir, real_power) || real_dir == real_power ||
      !fs::is_directory(real_dir)) {
    bad(dir_rel);
    return out;
  }
  // Each window is read through the directory's descriptor, without following a link and without
  // blocking on a FIFO swapped in after the listing (sys/safe_dir.h).
  auto windows = sys::Dir::OpenNoFollow(dir, /*create=*/false);
  fs::directory_iterator it(dir, ec);
  if (ec || !windows.ok()) {
    bad(dir_rel);
    return out;
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) {
      bad(dir_rel);
      break;
    }
    std::string name = it->path().filename().string();
    std::string rel = dir_rel + "/" + SafeName(name);
    auto st = it->symlink_status(ec);
    if (ec || fs::is_symlink(st) || !fs::is_regular_file(st) || it->path().extension() != ".json" ||
        SafeName(name) != name) {
      bad(rel);
      continue;
    }
    auto text = windows->ReadFile(name, kMaxJsonFileBytes);
    auto doc = text.ok() ? ParseJsonText(*text) : Result<Json>(text.error());
    Result<WindowFile> w =
        doc.ok() ? ParseWindowFields(*doc, rel) : Result<WindowFile>(doc.error());
    std::string_view broken;
    if (!w.ok())
      broken = reason::kWindowMalformed;
    else if (!ResultPathValid(*w, result_root))
      broken = reason::kWindowResultPathInvalid;
    else if (!StatusInvariantsHold(*w))
      broken = reason::kWindowMalformed;
    if (!broken.empty()) {
      out.errors.push_back({rel, {std::string(broken)}});
      continue;
    }
    out.files.push_back(std::move(*w));
  }
  std::sort(out.files.begin(), out.files.end(),
            [](const WindowFile& a, const WindowFile& b) { return a.rel_path < b.rel_path; });
  std::sort(out.errors.begin(), out.errors.end(),
            [](const ArtifactError& a, const ArtifactError& b) { return a.path < b.path; });
  return out;
}

bool ClockMatches(double start, double end, double duration) {
  double wall = end - start;
  if (!(wall > 0)) return false;
  double tolerance = std::max(kClockToleranceSeconds, kClockToleranceFraction * duration);
  return std::fabs(wall - duration) <= tolerance;
}

std::vector<std::string> CheckResult(const WindowFile& w, const fs::path& result_root) {
  auto doc = ReadJsonFile(result_root / w.result_path.get<std::string>());
  if (!doc.ok()) return {std::string(reason::kWindowResultMissing)};
  const Json& r = *doc;
  if (!r.is_object()) return {std::string(reason::kWindowResultMismatch)};
  auto start = AsFiniteNumber(Get(r, "benchmark_start_time_unix"));
  auto end = AsFiniteNumber(Get(r, "benchmark_end_time_unix"));
  auto duration = AsFiniteNumber(Get(r, "duration"));
  if (!start || !end || !duration || *start != w.start || *end != w.end || *duration != w.duration)
    return {std::string(reason::kWindowResultMismatch)};
  if (!ClockMatches(w.start, *w.end, *w.duration))
    return {std::string(reason::kWindowClockMismatch)};
  return {};
}

std::vector<WindowEvaluation> EvaluateWindows(const Topology& topology, const WindowsScan& scan,
                                              const std::optional<fs::path>& result_root,
                                              std::vector<ArtifactError>& artifact_errors) {
  std::set<WindowKey> expected(topology.windows.begin(), topology.windows.end());
  std::map<WindowKey, std::vector<size_t>> by_key;
  for (size_t i = 0; i < scan.files.size(); ++i) by_key[scan.files[i].key].push_back(i);
  for (const auto& [key, files] : by_key) {
    for (size_t i : files) {
      if (!expected.count(key))
        artifact_errors.push_back(
            {scan.files[i].rel_path, {std::string(reason::kWindowUnexpected)}});
      else if (files.size() > 1)
        artifact_errors.push_back(
            {scan.files[i].rel_path, {std::string(reason::kWindowDuplicate)}});
    }
  }
  std::sort(artifact_errors.begin(), artifact_errors.end(),
            [](const ArtifactError& a, const ArtifactError& b) { return a.path < b.path; });
  std::vector<WindowEvaluation> out;
  for (const auto& key : topology.windows) {
    WindowEvaluation w;
    w.key = key;
    const auto& files = by_key[key];
    if (files.empty()) AddReason(w.reasons, reason::kWindowMissing);
    if (files.size() > 1) AddReason(w.reasons, reason::kWindowDuplicate);
    if (files.size() == 1) {
      w.file = files[0];
      const WindowFile& f = scan.files[files[0]];
      if (f.status != "completed") {
        AddReason(w.reasons, reason::kWindowIncomplete);
      } else {
        if (result_root)
          for (const auto& r : CheckResult(f, *result_root)) AddReason(w.reasons, r);
        else if (!ClockMatches(f.start, *f.end, *f.duration))
          AddReason(w.reasons, reason::kWindowClockMismatch);
        if (w.reasons.empty()) w.coverage_span = TimeSpan{f.start, *f.end};
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<DeviceCoverage> CoverDevices(size_t span_index, const Topology& topology,
                                         const std::vector<DeviceSamples>& observed,
                                         std::optional<double> sample_interval_s) {
  std::set<DeviceKey> keys;
  for (const auto& d : topology.devices) keys.insert(d.key);
  std::vector<DeviceCoverage> out;
  for (const auto& key : keys) {
    DeviceCoverage dc;
    dc.key = key;
    auto it =
        std::lower_bound(observed.begin(), observed.end(), key,
                         [](const DeviceSamples& d, const DeviceKey& k) { return d.key < k; });
    bool seen = it != observed.end() && it->key == key;
    if (seen && span_index < it->spans.size()) dc.coverage = &it->spans[span_index];
    if (!seen) {
      AddReason(dc.reasons, reason::kWindowNotBracketed);
    } else if (it->uuids.size() != 1) {  // not attributable to one GPU: no window can use it
      AddReason(dc.reasons, reason::kGpuUuidChanged);
    } else if (!dc.coverage || !dc.coverage->bracketed()) {
      AddReason(dc.reasons, reason::kWindowNotBracketed);
    } else {
      const SpanCoverage& c = *dc.coverage;
      dc.uuid = it->uuids.front();
      if (SampleGapExceeded(c)) AddReason(dc.reasons, reason::kSampleGapExceeded);
      if (SampleLossExceeded(c, sample_interval_s))
        AddReason(dc.reasons, reason::kSampleLossExceeded);
    }
    out.push_back(std::move(dc));
  }
  return out;
}

void ApplyCoverage(WindowEvaluation& w, size_t span_index, const Topology& topology,
                   const std::vector<DeviceSamples>& observed,
                   std::optional<double> sample_interval_s) {
  for (const auto& dc : CoverDevices(span_index, topology, observed, sample_interval_s)) {
    for (const auto& r : dc.reasons) AddReason(IsGpulseReason(r) ? w.gpulse_reasons : w.reasons, r);
    if (dc.uuid) w.max_gap_by_device[dc.key.hostname + "/" + *dc.uuid] = dc.coverage->max_gap_s;
  }
}

}  // namespace gpulse::power
