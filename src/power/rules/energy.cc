#include "power/rules/energy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/csv.h"
#include "power/readers/contract.h"
#include "power/rules/coverage_rules.h"
#include "power/rules/integrity.h"
#include "power/rules/recompute.h"

namespace gpulse::power {
namespace {

std::string RoleOf(const Topology& t, const DeviceKey& key) {
  for (const auto& d : t.devices) {
    if (d.key != key) continue;
    std::set<std::string> roles;
    for (const auto& a : d.assignments) roles.insert(a.worker_role);
    return roles.size() == 1 ? *roles.begin() : "conflicting";
  }
  return "unknown";
}

GpuEnergy FromCoverage(const DeviceCoverage& dc, const Topology& t, const TimeSpan& span,
                       std::optional<double> interval) {
  GpuEnergy g;
  g.key = dc.key;
  g.uuid = dc.uuid;
  g.role = RoleOf(t, dc.key);
  g.reasons = dc.reasons;
  g.valid = dc.valid();
  if (dc.coverage && dc.coverage->bracketed()) {
    const SpanCoverage& c = *dc.coverage;
    g.max_gap_s = c.max_gap_s;
    g.observed_intervals = c.observed_intervals;
    g.expected_intervals = ExpectedIntervals(c, interval);
    if (g.expected_intervals)
      g.lost_intervals = std::max<int64_t>(0, *g.expected_intervals - c.observed_intervals);
    g.power_min_w = c.power_min_w;
    g.power_max_w = c.power_max_w;
    g.edge_seconds = c.edge_lower_s + c.edge_upper_s;
    if (g.valid && interval && g.lost_intervals) {
      double duration = span.end - span.start;
      g.energy_j = c.energy_j;
      g.mean_power_w = c.energy_j / duration;
      g.error_bound_j = ErrorBoundJoules(c.power_min_w, c.power_max_w, duration, *g.edge_seconds,
                                         *g.lost_intervals, *interval);
    }
  }
  if (!g.energy_j) g.valid = false;
  return g;
}

void Totals(WindowEnergy& w) {
  std::map<std::string, RoleEnergy> roles;
  bool all = !w.gpus.empty();
  double total = 0, bound = 0;
  for (const auto& g : w.gpus) {
    RoleEnergy& r = roles[g.role];
    r.role = g.role;
    if (r.gpus++ == 0) r.energy_j = 0, r.error_bound_j = 0;
    if (g.energy_j && r.energy_j) {
      *r.energy_j += *g.energy_j;
      *r.error_bound_j += *g.error_bound_j;
      total += *g.energy_j;
      bound += *g.error_bound_j;
    } else {
      r.energy_j.reset();
      r.error_bound_j.reset();
      all = false;
    }
  }
  for (auto& [name, r] : roles) w.roles.push_back(r);
  w.valid = w.reasons.empty() && all;
  if (w.valid) {
    w.total_j = total;
    w.total_error_bound_j = bound;
  }
}

Json Opt(const std::optional<double>& v) { return v ? Json(*v) : Json(); }
Json Opt(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }
Json Opt(const std::optional<std::string>& v) { return v ? Json(*v) : Json(); }
std::string Num(const std::optional<double>& v, int digits = 3) {
  return v ? fmt::format("{:.{}f}", *v, digits) : "n/a";
}
std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// samples.csv is not what the manifest describes: nothing integrated from it is a figure.
void Unverified(WindowEnergy& w) {
  w.verified = false;
  w.valid = false;
  w.total_j.reset();
  w.total_error_bound_j.reset();
  for (GpuEnergy& g : w.gpus) {
    g.valid = false;
    g.energy_j.reset();
    g.error_bound_j.reset();
    g.mean_power_w.reset();
  }
  for (RoleEnergy& r : w.roles) {
    r.energy_j.reset();
    r.error_bound_j.reset();
  }
}

}  // namespace

bool EnergyReport::all_valid() const {
  return !windows.empty() &&
         std::all_of(windows.begin(), windows.end(), [](const WindowEnergy& w) { return w.valid; });
}

double ErrorBoundJoules(double power_min_w, double power_max_w, double duration_s, double edge_s,
                        int64_t lost_intervals, double interval_s) {
  double uncovered = edge_s + static_cast<double>(lost_intervals) * interval_s;
  return (power_max_w - power_min_w) * std::min(duration_s, uncovered);
}

Result<EnergyReport> ComputeEnergy(const EnergyOptions& opt) {
  auto manifest = ReadJsonFile(opt.power_dir / kManifestFile);
  if (!manifest.ok()) return Error{manifest.error().code, "manifest: " + manifest.error().message};
  if (!manifest->is_object())
    return InvalidArgument("manifest malformed: not an object (" +
                           std::string(PyTypeName(*manifest)) + ")");
  auto topology = ParseTopology(*manifest);
  if (!topology.ok()) return InvalidArgument("manifest malformed: " + topology.error().message);
  EnergyReport rep;
  auto it = manifest->find("sample_interval_seconds");
  if (it != manifest->end())
    if (auto v = AsFiniteNumber(*it); v && *v > 0) rep.sample_interval_s = v;
  if (!rep.sample_interval_s)
    rep.problems.push_back(
        "manifest has no finite positive sample_interval_seconds: every GPU fails "
        "sample_loss_exceeded");
  if (topology->windows.empty()) rep.problems.push_back("no expected measurement window");
  if (topology->devices.empty()) rep.problems.push_back("no expected devices");
  RecomputeInputs in{*topology, rep.sample_interval_s, opt.power_dir, opt.result_root, opt.threads};
  Recomputation r = Recompute(in);
  rep.package_reasons = r.reasons;
  rep.result_files_checked = opt.result_root.has_value();
  for (const auto& s : r.samples.Reasons()) rep.problems.push_back(s + " in samples.csv");
  rep.integrity_failures = SamplesIntegrityFailures(*manifest, r.samples);
  for (size_t i = 0; i < r.windows_eval.size(); ++i) {
    const WindowEvaluation& we = r.windows_eval[i];
    WindowEnergy w;
    w.key = we.key;
    if (we.file) {
      const WindowFile& f = r.windows.files[*we.file];
      w.window_file = f.rel_path;
      w.start_unix = f.start;
      w.end_unix = f.end;
      w.duration_s = f.duration;
    }
    if (r.span_of[i] == SIZE_MAX) {
      w.reasons = we.reasons;  // the window itself fails: nothing is integrated
    } else {
      for (const auto& dc :
           CoverDevices(r.span_of[i], *topology, r.samples.devices, rep.sample_interval_s))
        w.gpus.push_back(FromCoverage(dc, *topology, *we.coverage_span, rep.sample_interval_s));
    }
    Totals(w);
    if (!rep.integrity_failures.empty()) Unverified(w);
    rep.windows.push_back(std::move(w));
  }
  if (rep.all_valid()) {
    rep.total_j = 0;
    rep.total_error_bound_j = 0;
    for (const auto& w : rep.windows) {
      *rep.total_j += *w.total_j;
      *rep.total_error_bound_j += *w.total_error_bound_j;
    }
  }
  return rep;
}

std::string RenderEnergyText(const EnergyReport& rep) {
  std::string out;
  for (const auto& f : rep.integrity_failures) out += "UNVERIFIED " + f + "\n";
  for (const auto& p : rep.problems) out += "WARN " + p + "\n";
  if (!rep.result_files_checked) out += "note: result files not checked (no --result-root)\n";
  for (const auto& w : rep.windows) {
    out += fmt::format("window {} ({}): ", WindowLabel(w.key),
                       w.window_file.value_or("no window file"));
    if (!w.reasons.empty() || !w.verified) {
      std::vector<std::string> why = w.reasons;
      if (!w.verified) why.insert(why.begin(), "unverified: samples.csv does not match the manifest");
      out += "INVALID " + Join(why, ",") + "\n";
      continue;
    }
    out += fmt::format("{:.3f} s, total {} J ± {} J{}\n", w.duration_s.value_or(0), Num(w.total_j),
                       Num(w.total_error_bound_j),
                       w.valid ? "" : " (incomplete: a GPU failed coverage)");
    out += fmt::format("  {:<28} {:<8} {:>14} {:>12} {:>10} {:>8} {:>6}  {}\n", "gpu", "role",
                       "energy_J", "bound_J", "mean_W", "max_gap", "lost", "status");
    for (const auto& g : w.gpus)
      out += fmt::format("  {:<28} {:<8} {:>14} {:>12} {:>10} {:>8} {:>6}  {}\n",
                         DeviceLabel(g.key), g.role, Num(g.energy_j), Num(g.error_bound_j),
                         Num(g.mean_power_w, 1), Num(g.max_gap_s),
                         g.lost_intervals ? std::to_string(*g.lost_intervals) : "n/a",
                         g.valid ? "ok" : Join(g.reasons, ","));
    for (const auto& r : w.roles)
      out += fmt::format("  role {:<8} {} GPUs: {} J ± {} J\n", r.role, r.gpus, Num(r.energy_j),
                         Num(r.error_bound_j));
  }
  out += fmt::format("total: {} J ± {} J\n", Num(rep.total_j), Num(rep.total_error_bound_j));
  return out;
}

Json RenderEnergyJson(const EnergyReport& rep) {
  Json windows = Json::array();
  for (const auto& w : rep.windows) {
    Json gpus = Json::array(), roles = Json::array();
    for (const auto& g : w.gpus)
      gpus.push_back({{"hostname", g.key.hostname},
                      {"gpu_index", g.key.gpu_index},
                      {"gpu_uuid", Opt(g.uuid)},
                      {"role", g.role},
                      {"valid", g.valid},
                      {"reason_codes", g.reasons},
                      {"energy_j", Opt(g.energy_j)},
                      {"error_bound_j", Opt(g.error_bound_j)},
                      {"mean_power_w", Opt(g.mean_power_w)},
                      {"max_sample_gap_seconds", Opt(g.max_gap_s)},
                      {"expected_intervals", Opt(g.expected_intervals)},
                      {"observed_intervals", Opt(g.observed_intervals)},
                      {"lost_intervals", Opt(g.lost_intervals)},
                      {"power_min_w", Opt(g.power_min_w)},
                      {"power_max_w", Opt(g.power_max_w)},
                      {"edge_seconds", Opt(g.edge_seconds)}});
    for (const auto& r : w.roles)
      roles.push_back({{"role", r.role},
                       {"gpus", r.gpus},
                       {"energy_j", Opt(r.energy_j)},
                       {"error_bound_j", Opt(r.error_bound_j)}});
    windows.push_back({{"benchmark_type", w.key.benchmark_type},
                       {"concurrency", w.key.concurrency},
                       {"window_file", Opt(w.window_file)},
                       {"start_unix", Opt(w.start_unix)},
                       {"end_unix", Opt(w.end_unix)},
                       {"duration_s", Opt(w.duration_s)},
                       {"valid", w.valid},
                       {"verified", w.verified},
                       {"reason_codes", w.reasons},
                       {"gpus", gpus},
                       {"roles", roles},
                       {"total_j", Opt(w.total_j)},
                       {"total_error_bound_j", Opt(w.total_error_bound_j)}});
  }
  return {{"method", "trapezoid_linear_edge_interpolation"},
          {"result_files_checked", rep.result_files_checked},
          {"sample_interval_seconds", Opt(rep.sample_interval_s)},
          {"package_reason_codes", rep.package_reasons},
          {"problems", rep.problems},
          {"samples_verified", rep.integrity_failures.empty()},
          {"integrity_failures", rep.integrity_failures},
          {"windows", windows},
          {"all_valid", rep.all_valid()},
          {"total_j", Opt(rep.total_j)},
          {"total_error_bound_j", Opt(rep.total_error_bound_j)}};
}

std::string RenderEnergyCsv(const EnergyReport& rep) {
  auto csv = [](const std::string& s) { return CsvField(s); };
  auto num = [](const std::optional<double>& v) {
    return v ? fmt::format("{}", *v) : std::string();
  };
  std::string out =
      "benchmark_type,concurrency,scope,hostname,gpu_index,gpu_uuid,role,valid,energy_j,error_"
      "bound_j,"
      "max_sample_gap_seconds,lost_intervals,reason_codes\n";
  for (const auto& w : rep.windows) {
    std::string head = csv(w.key.benchmark_type) + "," + std::to_string(w.key.concurrency) + ",";
    for (const auto& g : w.gpus)
      out += head + "gpu," + csv(g.key.hostname) + "," + std::to_string(g.key.gpu_index) + "," +
             csv(g.uuid.value_or("")) + "," + g.role + "," + (g.valid ? "true" : "false") + "," +
             num(g.energy_j) + "," + num(g.error_bound_j) + "," + num(g.max_gap_s) + "," +
             (g.lost_intervals ? std::to_string(*g.lost_intervals) : "") + "," +
             csv(Join(g.reasons, ";")) + "\n";
    for (const auto& r : w.roles)
      out += head + "role,,,," + r.role + "," + (r.energy_j ? "true" : "false") + "," +
             num(r.energy_j) + "," + num(r.error_bound_j) + ",,,\n";
    out += head + "window,,,,," + (w.valid ? "true" : "false") + "," + num(w.total_j) + "," +
           num(w.total_error_bound_j) + ",,," + csv(Join(w.reasons, ";")) + "\n";
  }
  return out;
}

}  // namespace gpulse::power
