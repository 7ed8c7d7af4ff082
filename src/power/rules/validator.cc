#include "power/rules/validator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "power/readers/contract.h"
#include "power/rules/integrity.h"
#include "power/rules/reasons.h"
#include "power/rules/recompute.h"
#include "power/rules/wire_contract.h"

namespace gpulse::power {
namespace {

constexpr size_t kMaxDetailsPerReason = 10;

const Json& Get(const Json& doc, const char* key) {
  static const Json kNull;
  auto it = doc.find(key);
  return it == doc.end() ? kNull : *it;
}

std::string PyList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

std::string PyBool(const Json& j) {
  if (j.is_boolean()) return j.get<bool>() ? "True" : "False";
  if (j.is_null()) return "None";
  return Describe(j);
}

std::optional<double> SampleInterval(const Json& m) {
  auto v = AsFiniteNumber(Get(m, "sample_interval_seconds"));
  if (!v || *v <= 0) return std::nullopt;
  return v;
}

void DuplicateKeys(const Json& m, std::vector<std::string>& failures) {
  std::set<std::string> seen;
  const Json& devices = Get(m, "expected_devices");
  if (devices.is_array())
    for (const auto& d : devices) {
      if (!d.is_object()) continue;
      std::string key = Describe(Get(d, "hostname")) + "/" + Describe(Get(d, "gpu_index"));
      if (!seen.insert(key).second) failures.push_back("expected_devices has duplicate key " + key);
    }
  seen.clear();
  const Json& windows = Get(m, "expected_windows");
  if (windows.is_array())
    for (const auto& w : windows) {
      if (!w.is_object()) continue;
      std::string key = Describe(Get(w, "benchmark_type")) + "/" + Describe(Get(w, "concurrency"));
      if (!seen.insert(key).second) failures.push_back("expected_windows has duplicate key " + key);
    }
}

void ReasonFailures(const Recomputation& r, std::vector<std::string>& out) {
  for (const auto& reason : r.samples.Reasons()) {
    std::string line = reason + " in samples.csv";
    if (reason == reason::kSamplesCsvMalformed) {
      if (!r.samples.malformed_examples.empty()) {
        const auto& e = r.samples.malformed_examples.front();
        line += fmt::format(": {} malformed row(s), first at line {}: {}", r.samples.malformed_rows,
                            e.line, e.why);
      } else if (r.samples.read_error) {
        line += ": " + *r.samples.read_error;
      }
    }
    out.push_back(line);
  }
  std::map<std::string, size_t> shown;
  for (const auto& [reason, detail] : r.devices.details) {
    size_t n = ++shown[reason];
    if (n <= kMaxDetailsPerReason) out.push_back(reason + " (device identity/topology): " + detail);
  }
  for (const auto& [reason, n] : shown)
    if (n > kMaxDetailsPerReason)
      out.push_back(fmt::format("{} (device identity/topology): {} more not shown", reason,
                                n - kMaxDetailsPerReason));
  for (const auto& w : r.windows_eval) {
    for (const auto& reason : w.reasons)
      out.push_back(reason + " (window " + WindowLabel(w.key) + ")");
    for (const auto& reason : w.gpulse_reasons)
      out.push_back(reason + " (window " + WindowLabel(w.key) + ")");
  }
  for (const auto& e : r.artifact_errors)
    for (const auto& reason : e.reasons) out.push_back(reason + " (" + e.path + ")");
}

void ReconcileEvidence(const Json& m, const Recomputation& r, std::vector<std::string>& out) {
  CheckRowCount(m, r.samples, out);
  auto scrapes = AsStrictInt(Get(m, "scrape_count"));
  if (scrapes && r.samples.max_scrape_seq && *scrapes < *r.samples.max_scrape_seq + 1)
    out.push_back(fmt::format("scrape_count is {}, below max(scrape_seq) + 1 = {}", *scrapes,
                              *r.samples.max_scrape_seq + 1));
  const Json& observed = Get(m, "observed_devices");
  if (!observed.is_array() || observed.empty())
    out.push_back("observed_devices is empty or not a list");
  if (!SameEvidence(observed, ObservedDevicesJson(r.samples)))
    out.push_back("observed_devices does not match samples.csv");
  if (!SameEvidence(Get(m, "window_validations"), WindowValidationsJson(r)))
    out.push_back("window_validations does not match the recomputed window coverage");
  if (!SameEvidence(Get(m, "artifact_errors"), ArtifactErrorsJson(r.artifact_errors)))
    out.push_back("artifact_errors does not match the files under windows/");
  // gpulse's own evidence is reconciled when the package carries it (a gpulse package); a package
  // of another producer is judged by gpulse's rules without being asked to have recorded them.
  bool own = m.is_object() && m.contains("gpulse_reason_codes");
  if (own && !SameEvidence(Get(m, "gpulse_window_findings"), GpulseWindowFindingsJson(r)))
    out.push_back("gpulse_window_findings does not match the recomputed window coverage");
  std::set<std::string> stored, recomputed;
  for (const auto& s : r.reasons)
    if (own || !IsGpulseReason(s)) recomputed.insert(s);
  for (const auto& s : StoredReasons(m))
    if (IsDiskDerived(s)) stored.insert(s);
  std::vector<std::string> only_stored, only_recomputed;
  std::set_difference(stored.begin(), stored.end(), recomputed.begin(), recomputed.end(),
                      std::back_inserter(only_stored));
  std::set_difference(recomputed.begin(), recomputed.end(), stored.begin(), stored.end(),
                      std::back_inserter(only_recomputed));
  if (!only_stored.empty() || !only_recomputed.empty())
    out.push_back("disk-derived reason_codes mismatch: stored-only=" + PyList(only_stored) +
                  ", recomputed-only=" + PyList(only_recomputed));
}

void CheckLifecycle(const Json& m, const SamplesScan& s, std::vector<std::string>& out) {
  if (s.devices.empty()) return;
  double first = s.devices.front().first_t, last = s.devices.front().last_t;
  for (const auto& d : s.devices) {
    first = std::min(first, d.first_t);
    last = std::max(last, d.last_t);
  }
  auto started = AsFiniteNumber(Get(m, "started_at_unix"));
  auto stopped = AsFiniteNumber(Get(m, "stopped_at_unix"));
  if (started && first < *started)
    out.push_back(
        fmt::format("samples.csv starts at {}, before started_at_unix {}", first, *started));
  if (stopped && last > *stopped)
    out.push_back(fmt::format("samples.csv ends at {}, after stopped_at_unix {}", last, *stopped));
}

void Summarize(const Recomputation& r, const Topology& t, ValidationReport& rep) {
  rep.expected_devices = static_cast<int64_t>(t.devices.size());
  rep.observed_devices = static_cast<int64_t>(r.samples.devices.size());
  std::map<std::string, int> uuid_use;
  for (const auto& d : r.samples.devices)
    for (const auto& u : d.uuids) ++uuid_use[u];
  for (const auto& d : r.samples.devices)
    if (d.uuids.size() == 1 && uuid_use[d.uuids[0]] == 1) ++rep.stable_uuids;
  rep.sample_rows = r.samples.data_rows;
  rep.windows = static_cast<int64_t>(r.windows.files.size());
  for (const auto& w : r.windows_eval)
    for (const auto& [k, g] : w.max_gap_by_device)
      rep.max_sample_gap_seconds = std::max(rep.max_sample_gap_seconds.value_or(g), g);
}

}  // namespace

// A damaged package can carry megabyte-long names; keep every failure line readable.
static void CapLines(std::vector<std::string>& lines) {
  constexpr size_t kMaxLine = 1024;
  for (auto& l : lines)
    if (l.size() > kMaxLine)
      l = l.substr(0, kMaxLine) + fmt::format("... ({} more bytes)", l.size() - kMaxLine);
}

ValidationReport ValidatePackage(const ValidateOptions& opt) {
  ValidationReport rep;
  auto& fail = rep.failures;
  auto manifest = ReadJsonFile(opt.power_dir / kManifestFile);
  if (!manifest.ok()) {
    std::string path = (opt.power_dir / kManifestFile).string();
    if (manifest.error().code == ErrorCode::kNotFound)
      fail.push_back("manifest missing: " + path);
    else
      fail.push_back("manifest unreadable: " + manifest.error().message);
    CapLines(fail);
    return rep;
  }
  const Json& m = *manifest;
  if (!m.is_object()) {
    fail.push_back("manifest malformed: not an object (" + std::string(PyTypeName(m)) + ")");
    return rep;
  }
  rep.stored_publication_valid = Get(m, "publication_valid");
  rep.producer_git_commit = Get(m, "producer_git_commit");
  rep.job_id = Get(m, "job_id");
  for (auto& f : CheckWireContract(m)) fail.push_back(std::move(f));
  DuplicateKeys(m, fail);
  auto topology = ParseTopology(m);
  if (!topology.ok()) {
    fail.push_back("manifest malformed: " + topology.error().message);
    CapLines(fail);
    return rep;
  }
  if (topology->windows.empty()) fail.push_back("no expected measurement window");
  RecomputeInputs in{*topology, SampleInterval(m), opt.power_dir, opt.result_root, opt.threads};
  Recomputation r = Recompute(in);
  rep.recomputed_reasons = r.reasons;
  ReasonFailures(r, fail);
  bool digest_ok = CheckDigest(m, r.samples, fail);
  ReconcileEvidence(m, r, fail);
  CheckLifecycle(m, r.samples, fail);
  VerdictInputs v;
  v.status_complete = Get(m, "status") == "complete";
  v.required = Get(m, "required") == true;
  for (const auto& s : StoredReasons(m))
    if (!IsDiskDerived(s)) v.runtime_reasons.push_back(s);
  v.digest_valid = digest_ok;
  rep.recomputed_publication_valid = PublicationValid(r, v);
  const Json& stored = rep.stored_publication_valid;
  if (stored.is_boolean()) {
    if (stored.get<bool>() != *rep.recomputed_publication_valid)
      fail.push_back("publication_valid is " + PyBool(stored) + ", recomputed " +
                     PyBool(Json(*rep.recomputed_publication_valid)));
    if (!stored.get<bool>()) fail.push_back("stored publication_valid is false");
  }
  for (auto& f : CheckExpectedRoles(*topology, opt.expect_roles)) fail.push_back(std::move(f));
  if (opt.require_distinct_het_groups)
    for (auto& f : CheckDistinctHetGroups(*topology)) fail.push_back(std::move(f));
  Summarize(r, *topology, rep);
  rep.ok = fail.empty() && *rep.recomputed_publication_valid;
  CapLines(fail);
  return rep;
}

Result<std::map<std::string, int64_t>> ParseExpectRoles(const std::vector<std::string>& values) {
  std::map<std::string, int64_t> out;
  for (const auto& v : values) {
    auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      return InvalidArgument("--expect-role must be ROLE=COUNT, got '" + v + "'");
    std::string role = v.substr(0, eq), count = v.substr(eq + 1);
    if (!IsKnownRole(role))
      return InvalidArgument("--expect-role: unknown role '" + role +
                             "'; allowed roles are ['prefill', 'decode', 'agg']");
    bool digits =
        !count.empty() && count.size() <= 12 &&
        std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      return InvalidArgument("--expect-role: count for '" + role +
                             "' must be a non-negative integer, got '" + count + "'");
    if (!out.emplace(role, std::stoll(count)).second)
      return InvalidArgument("duplicate --expect-role for '" + role + "'");
  }
  return out;
}

std::string RenderReportText(const ValidationReport& rep) {
  std::string out = fmt::format("validation_ok: {}\n", rep.ok ? "True" : "False");
  out += "publication_valid: " + PyBool(rep.stored_publication_valid) + "\n";
  auto jtext = [](const Json& j) { return j.is_string() ? j.get<std::string>() : PyBool(j); };
  out += "  producer_git_commit: " + jtext(rep.producer_git_commit) + "\n";
  out += "  job_id: " + jtext(rep.job_id) + "\n";
  out += fmt::format("  expected_devices: {}\n  observed_devices: {}\n  stable_uuids: {}\n",
                     rep.expected_devices, rep.observed_devices, rep.stable_uuids);
  out += fmt::format("  sample_rows: {}\n  windows: {}\n", rep.sample_rows, rep.windows);
  out += "  max_sample_gap_seconds: " +
         (rep.max_sample_gap_seconds ? fmt::format("{}", *rep.max_sample_gap_seconds) : "None") +
         "\n";
  for (const auto& f : rep.failures) out += "  FAIL " + f + "\n";
  return out;
}

Json RenderReportJson(const ValidationReport& rep) {
  Json summary = {{"producer_git_commit", rep.producer_git_commit},
                  {"job_id", rep.job_id},
                  {"expected_devices", rep.expected_devices},
                  {"observed_devices", rep.observed_devices},
                  {"stable_uuids", rep.stable_uuids},
                  {"sample_rows", rep.sample_rows},
                  {"windows", rep.windows},
                  {"max_sample_gap_seconds",
                   rep.max_sample_gap_seconds ? Json(*rep.max_sample_gap_seconds) : Json()}};
  return {{"validation_ok", rep.ok},
          {"publication_valid", rep.stored_publication_valid},
          {"recomputed_publication_valid",
           rep.recomputed_publication_valid ? Json(*rep.recomputed_publication_valid) : Json()},
          {"recomputed_reason_codes", rep.recomputed_reasons},
          {"summary", summary},
          {"failures", rep.failures}};
}

}  // namespace gpulse::power
