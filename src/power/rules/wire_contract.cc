#include "power/rules/wire_contract.h"

#include <algorithm>
#include <set>

#include "power/readers/contract.h"
#include "power/rules/reasons.h"

namespace gpulse::power {
namespace {

const Json& Get(const Json& doc, const std::string& key) {
  static const Json kNull;
  auto it = doc.find(key);
  return it == doc.end() ? kNull : *it;
}

class Checker {
 public:
  explicit Checker(const Json& m) : m_(m) {}

  void Fail(const std::string& key, const std::string& rule) {
    failures_.push_back(key + " " + rule + ", got " + Describe(Get(m_, key)));
  }
  void Equals(const std::string& key, std::string_view want) {
    const Json& v = Get(m_, key);
    if (!v.is_string() || v.get<std::string>() != want)
      Fail(key, "must be \"" + std::string(want) + "\"");
  }
  void NonEmptyString(const std::string& key) {
    if (!IsNonEmptyString(Get(m_, key))) Fail(key, "must be a non-empty string");
  }
  void Bool(const std::string& key) {
    if (!Get(m_, key).is_boolean()) Fail(key, "must be a bool");
  }
  void Count(const std::string& key) {
    auto v = AsStrictInt(Get(m_, key));
    if (!v || *v < 0) Fail(key, "must be a non-negative integer");
  }
  std::optional<double> Finite(const std::string& key) {
    auto v = AsFiniteNumber(Get(m_, key));
    if (!v) Fail(key, "must be a finite number");
    return v;
  }
  std::vector<std::string> failures_;

 private:
  const Json& m_;
};

void CheckExporter(const Json& m, std::vector<std::string>& out) {
  const Json& e = Get(m, "dcgm_exporter");
  if (!e.is_object()) {
    out.push_back("dcgm_exporter must be an object, got " + Describe(e));
    return;
  }
  Checker c(e);
  if (!IsNonEmptyString(Get(e, "container_image_resolved")))
    c.Fail("container_image_resolved", "must be a non-empty string");
  const Json& sha = Get(e, "container_image_sha256");
  if (!sha.is_null() && !(sha.is_string() && IsLowerHex(sha.get<std::string>(), 64)))
    c.Fail("container_image_sha256", "must be null or a lowercase SHA-256 digest");
  auto port = AsStrictInt(Get(e, "port"));
  if (!port || *port <= 0 || *port >= 65536) c.Fail("port", "must be an integer in 1..65535");
  const Json& cmd = Get(e, "command");
  bool cmd_ok =
      IsNonEmptyString(cmd) ||
      (cmd.is_array() && !cmd.empty() &&
       std::all_of(cmd.begin(), cmd.end(), [](const Json& a) { return IsNonEmptyString(a); }));
  if (!cmd_ok) c.Fail("command", "must be a non-empty string or list of strings");
  for (auto& f : c.failures_) out.push_back("dcgm_exporter." + f);
}

// One list of reason codes: strings, each accepted by `known`, no duplicates. Returns the codes.
std::set<std::string> CheckReasonList(const Json& m, const char* key,
                                      bool (*known)(std::string_view), const char* unknown_rule,
                                      std::vector<std::string>& out) {
  std::set<std::string> seen;
  const Json& rc = Get(m, key);
  if (!rc.is_array() ||
      !std::all_of(rc.begin(), rc.end(), [](const Json& r) { return r.is_string(); })) {
    out.push_back(std::string(key) + " must be a list of strings, got " + Describe(rc));
    return seen;
  }
  for (const auto& r : rc) {
    const auto& s = r.get_ref<const std::string&>();
    if (!known(s)) out.push_back(std::string(key) + " has " + unknown_rule + " " + Describe(r));
    if (!seen.insert(s).second) out.push_back(std::string(key) + " has duplicate " + Describe(r));
  }
  return seen;
}

// `reason_codes` holds the upstream's v1 enum only; gpulse's own codes, when the package has them,
// are in `gpulse_reason_codes` (ADR 0016). The lifecycle rules apply to both together.
void CheckReasons(const Json& m, std::vector<std::string>& out) {
  auto seen = CheckReasonList(m, "reason_codes", IsUpstreamReason, "unknown v1 reason code", out);
  if (m.is_object() && m.contains("gpulse_reason_codes"))
    seen.merge(CheckReasonList(m, "gpulse_reason_codes", IsGpulseReason,
                               "a code that is not one of gpulse's own", out));
  bool complete = Get(m, "status") == "complete";
  bool required = Get(m, "required") == true;
  for (const auto& s : seen) {
    if (complete && Contains(FatalLifecycleReasons(), s))
      out.push_back("reason_codes: a complete manifest cannot carry fatal reason " + s);
    if (complete && required && Contains(StartupFailureReasons(), s))
      out.push_back("reason_codes: a complete required manifest cannot carry startup reason " + s);
  }
}

// Optional (gpulse's V2 addition, written together): the hosts whose clocks were probed and those
// no tool vouched for, consistent with each other and with clock_sync_unverified in reason_codes.
void CheckClockSyncFailures(const Json& m, std::vector<std::string>& out) {
  if (!m.is_object()) return;
  bool has_checked = m.contains("clock_sync_checked"),
       has_failures = m.contains("clock_sync_failures");
  if (has_checked != has_failures) {
    out.push_back("clock_sync_checked and clock_sync_failures must be present together");
    return;
  }
  if (!has_failures) return;
  const Json& checked = m.at("clock_sync_checked");
  if (!checked.is_array() || checked.empty() ||
      !std::all_of(checked.begin(), checked.end(),
                   [](const Json& h) { return IsNonEmptyString(h); })) {
    out.push_back("clock_sync_checked must be a non-empty list of hostnames, got " +
                  Describe(checked));
    return;
  }
  const Json& f = m.at("clock_sync_failures");
  bool ok = f.is_array() && std::all_of(f.begin(), f.end(), [](const Json& e) {
              return e.is_object() && IsNonEmptyString(Get(e, "hostname")) &&
                     Get(e, "detail").is_string();
            });
  if (!ok) {
    out.push_back("clock_sync_failures must be a list of {hostname, detail}, got " + Describe(f));
    return;
  }
  auto stored = StoredReasons(m);
  bool flagged =
      std::find(stored.begin(), stored.end(), reason::kClockSyncUnverified) != stored.end();
  if (!f.empty() && !flagged)
    out.push_back("clock_sync_failures lists unverified clocks but gpulse_reason_codes lacks " +
                  std::string(reason::kClockSyncUnverified));
  if (f.empty() && flagged)
    out.push_back("gpulse_reason_codes has " + std::string(reason::kClockSyncUnverified) +
                  " but clock_sync_failures is empty");
  for (const auto& e : f)
    if (std::find(checked.begin(), checked.end(), Get(e, "hostname")) == checked.end())
      out.push_back("clock_sync_failures names " + Describe(Get(e, "hostname")) +
                    ", which clock_sync_checked does not list");
}

}  // namespace

std::vector<std::string> StoredReasons(const Json& manifest) {
  std::vector<std::string> out;
  for (const char* key : {"reason_codes", "gpulse_reason_codes"}) {
    const Json& rc = Get(manifest, key);
    if (!rc.is_array()) continue;
    for (const auto& r : rc)
      if (r.is_string()) out.push_back(r.get<std::string>());
  }
  return out;
}

std::vector<std::string> CheckWireContract(const Json& m) {
  Checker c(m);
  auto schema = AsStrictInt(Get(m, "schema_version"));
  if (!schema || *schema != kSchemaVersion) c.Fail("schema_version", "must be the integer 1");
  c.Equals("producer", kProducer);
  c.NonEmptyString("producer_version");
  const Json& git = Get(m, "producer_git_commit");
  if (!git.is_null() && !(git.is_string() && (IsLowerHex(git.get<std::string>(), 40) ||
                                              IsLowerHex(git.get<std::string>(), 64))))
    c.Fail("producer_git_commit", "must be null or a lowercase 40- or 64-hex Git id");
  c.Equals("source_metric", kPowerMetric);
  c.Equals("unit", kPowerUnit);
  c.Equals("power_scope", kPowerScope);
  c.Equals("timestamp_source", kClockSource);
  c.NonEmptyString("job_id");
  c.NonEmptyString("run_name");
  auto interval = AsFiniteNumber(Get(m, "sample_interval_seconds"));
  if (!interval || *interval <= 0 || *interval > kMaxSampleIntervalSeconds)
    c.Fail("sample_interval_seconds", "must be a finite number in (0, 3.0]");
  auto timeout = AsFiniteNumber(Get(m, "request_timeout_seconds"));
  if (!timeout || *timeout <= 0) c.Fail("request_timeout_seconds", "must be a finite number > 0");
  const Json& max_scrape = Get(m, "max_scrape_duration_seconds");
  if (!max_scrape.is_null() && !(IsFiniteNumber(max_scrape) && max_scrape.get<double>() >= 0))
    c.Fail("max_scrape_duration_seconds", "must be null or a finite number >= 0");
  c.Bool("required");
  c.Equals("status", "complete");
  auto started = c.Finite("started_at_unix");
  auto stopped = c.Finite("stopped_at_unix");
  if (started && stopped && *stopped < *started)
    c.Fail("stopped_at_unix",
           "must not be before started_at_unix " + Describe(Get(m, "started_at_unix")));
  c.Bool("publication_valid");
  c.Count("scrape_count");
  c.Count("sample_row_count");
  std::vector<std::string> out = std::move(c.failures_);
  CheckReasons(m, out);
  CheckExporter(m, out);
  CheckClockSyncFailures(m, out);
  return out;
}

}  // namespace gpulse::power
