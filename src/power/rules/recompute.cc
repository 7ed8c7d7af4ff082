#include "power/rules/recompute.h"

#include <algorithm>

#include "power/readers/contract.h"
#include "power/rules/reasons.h"

namespace gpulse::power {
namespace {

void Add(std::vector<std::string>& list, std::string_view r) {
  if (std::find(list.begin(), list.end(), r) == list.end()) list.emplace_back(r);
}

}  // namespace

bool Recomputation::all_windows_valid() const {
  return !windows_eval.empty() && std::all_of(windows_eval.begin(), windows_eval.end(),
                                              [](const WindowEvaluation& w) { return w.valid(); });
}

Recomputation Recompute(const RecomputeInputs& in) {
  Recomputation r;
  r.windows = ScanWindowsDir(in.power_dir, in.result_root);
  r.artifact_errors = r.windows.errors;
  r.windows_eval = EvaluateWindows(in.topology, r.windows, in.result_root, r.artifact_errors);
  ScanOptions opt;
  opt.threads = in.threads;
  std::vector<size_t>& span_of = r.span_of;
  span_of.assign(r.windows_eval.size(), SIZE_MAX);
  for (size_t i = 0; i < r.windows_eval.size(); ++i) {
    if (!r.windows_eval[i].coverage_span) continue;
    span_of[i] = opt.spans.size();
    opt.spans.push_back(*r.windows_eval[i].coverage_span);
  }
  r.samples = ScanSamplesFile(in.power_dir / kSamplesFile, opt);
  r.devices = CheckDevices(in.topology, r.samples.devices);
  for (size_t i = 0; i < r.windows_eval.size(); ++i)
    if (span_of[i] != SIZE_MAX)
      ApplyCoverage(r.windows_eval[i], span_of[i], in.topology, r.samples.devices,
                    in.sample_interval_s);
  for (const auto& s : r.samples.Reasons()) Add(r.reasons, s);
  for (const auto& s : r.devices.reasons) Add(r.reasons, s);
  for (const auto& w : r.windows_eval) {
    for (const auto& s : w.reasons) Add(r.reasons, s);
    for (const auto& s : w.gpulse_reasons) Add(r.reasons, s);
  }
  for (const auto& e : r.artifact_errors)
    for (const auto& s : e.reasons) Add(r.reasons, s);
  return r;
}

Json ObservedDevicesJson(const SamplesScan& samples) {
  Json out = Json::array();
  for (const auto& d : samples.devices) {
    out.push_back({{"hostname", d.key.hostname},
                   {"gpu_index", d.key.gpu_index},
                   {"gpu_uuids", d.uuids},
                   {"first_sample_time_unix", d.first_t},
                   {"last_sample_time_unix", d.last_t}});
  }
  return out;
}

Json WindowValidationsJson(const Recomputation& r) {
  Json out = Json::array();
  for (const auto& w : r.windows_eval) {
    Json gaps = Json::object();
    for (const auto& [k, v] : w.max_gap_by_device) gaps[k] = v;
    out.push_back({{"benchmark_type", w.key.benchmark_type},
                   {"concurrency", w.key.concurrency},
                   {"window_file", w.file ? Json(r.windows.files[*w.file].rel_path) : Json()},
                   {"power_coverage_valid", w.upstream_valid()},
                   {"reason_codes", w.reasons},
                   {"per_device_max_sample_gap_seconds", gaps}});
  }
  return out;
}

Json GpulseWindowFindingsJson(const Recomputation& r) {
  Json out = Json::array();
  for (const auto& w : r.windows_eval) {
    if (w.gpulse_reasons.empty()) continue;
    out.push_back({{"benchmark_type", w.key.benchmark_type},
                   {"concurrency", w.key.concurrency},
                   {"reason_codes", w.gpulse_reasons}});
  }
  return out;
}

std::pair<std::vector<std::string>, std::vector<std::string>> SplitReasons(
    const std::vector<std::string>& reasons) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  for (const auto& s : reasons) (IsGpulseReason(s) ? out.second : out.first).push_back(s);
  return out;
}

Json ArtifactErrorsJson(const std::vector<ArtifactError>& errors) {
  Json out = Json::array();
  for (const auto& e : errors) out.push_back({{"path", e.path}, {"reason_codes", e.reasons}});
  return out;
}

bool PublicationValid(const Recomputation& r, const VerdictInputs& v) {
  for (const auto& s : v.runtime_reasons) {
    if (Contains(FatalLifecycleReasons(), s)) return false;
    if (v.required && Contains(StartupFailureReasons(), s)) return false;
    if (Contains(UnrecoverableStartupReasons(), s)) return false;
    if (s == reason::kClockSyncUnverified) return false;
  }
  return v.status_complete && r.devices.valid() && r.all_windows_valid() &&
         r.samples.Reasons().empty() && v.digest_valid && r.artifact_errors.empty();
}

}  // namespace gpulse::power
