#include "power/collector/collect_session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>
#include <sstream>

#include "net/http_client.h"
#include "power/collector/artifact_writer.h"
#include "power/collector/child_process.h"
#include "power/collector/clock_sync.h"
#include "power/collector/collector.h"
#include "power/collector/exporter_launch.h"
#include "power/collector/window_writer.h"
#include "power/readers/byte_source.h"
#include "power/readers/contract.h"
#include "power/rules/reasons.h"
#include "power/rules/recompute.h"
#include "sys/safe_dir.h"

namespace gpulse::power {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void AddReason(std::vector<std::string>& list, std::string_view r) {
  if (std::find(list.begin(), list.end(), r) == list.end()) list.emplace_back(r);
}

bool HasAny(const std::vector<std::string>& reasons, std::span<const std::string_view> set) {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const std::string& r) { return Contains(set, r); });
}

std::string ReplacePort(std::string cmd, int port) {
  for (size_t at; (at = cmd.find("{port}")) != std::string::npos;)
    cmd.replace(at, 6, std::to_string(port));
  return cmd;
}

Json ExpectedDevicesJson(const Topology& t) {
  Json out = Json::array();
  for (const auto& d : t.devices) {
    Json as = Json::array();
    for (const auto& a : d.assignments)
      as.push_back({{"worker_role", a.worker_role},
                    {"worker_index", a.worker_index},
                    {"worker_process", a.worker_process},
                    {"het_group", a.het_group ? Json(*a.het_group) : Json()}});
    out.push_back(
        {{"hostname", d.key.hostname}, {"gpu_index", d.key.gpu_index}, {"assignments", as}});
  }
  return out;
}

Json ExpectedWindowsJson(const Topology& t) {
  Json out = Json::array();
  for (const auto& w : t.windows)
    out.push_back({{"benchmark_type", w.benchmark_type}, {"concurrency", w.concurrency}});
  return out;
}

// The session's view of the package while it runs; Manifest() renders it.
struct Session {
  const CollectOptions& o;
  fs::path power_dir;
  std::optional<sys::Dir> package{};  // opened (and created) once nothing refused the run
  double started_at = 0;
  std::optional<double> stopped_at{};
  std::string status = "starting";
  std::optional<bool> publication_valid{};
  std::vector<std::string> reasons{};
  CollectorSummary collector{};
  std::optional<Recomputation> recomputed{};
  std::optional<std::string> sha{};
  std::optional<std::vector<ClockSyncResult>> clocks{};  // when the check ran
  // The container image's digest, hashed on its own thread from the start: a large local image
  // never delays the benchmark. Manifests written before it is done record null; the terminal one
  // waits for it.
  std::shared_future<std::optional<std::string>> image_sha{};

  std::optional<std::string> ImageShaIfDone() const {
    if (!image_sha.valid() ||
        image_sha.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      return std::nullopt;
    return image_sha.get();
  }

  const CollectConfig& c() const { return o.config; }

  Json Manifest() const {
    Json m = Json::object();
    m["schema_version"] = kSchemaVersion;
    m["producer"] = kProducer;
    m["producer_version"] = o.producer.version;
    m["producer_git_commit"] = o.producer.git_commit ? Json(*o.producer.git_commit) : Json();
    m["source_metric"] = kPowerMetric;
    m["unit"] = kPowerUnit;
    m["power_scope"] = kPowerScope;
    m["timestamp_source"] = kClockSource;
    m["job_id"] = c().job_id;
    m["run_name"] = c().run_name;
    m["sample_interval_seconds"] = c().interval_s;
    m["request_timeout_seconds"] = c().request_timeout_s;
    m["max_scrape_duration_seconds"] =
        collector.max_scrape_duration_s ? Json(*collector.max_scrape_duration_s) : Json();
    m["required"] = c().required;
    m["started_at_unix"] = started_at;
    m["stopped_at_unix"] = stopped_at ? Json(*stopped_at) : Json();
    m["status"] = status;
    m["publication_valid"] = publication_valid ? Json(*publication_valid) : Json();
    auto sha_image = ImageShaIfDone();
    m["dcgm_exporter"] = {{"container_image_resolved", c().exporter.container_image},
                          {"container_image_sha256", sha_image ? Json(*sha_image) : Json()},
                          {"port", c().exporter.port},
                          {"command", ReplacePort(c().exporter.command, c().exporter.port)}};
    m["expected_devices"] = ExpectedDevicesJson(c().topology);
    m["expected_windows"] = ExpectedWindowsJson(c().topology);
    m["scrape_count"] = collector.scrape_count;
    m["sample_row_count"] = recomputed ? recomputed->samples.data_rows : collector.rows_written;
    m["samples_sha256"] = sha ? Json(*sha) : Json();
    m["observed_devices"] = recomputed ? ObservedDevicesJson(recomputed->samples) : Json::array();
    m["window_validations"] = recomputed ? WindowValidationsJson(*recomputed) : Json::array();
    m["artifact_errors"] =
        recomputed ? ArtifactErrorsJson(recomputed->artifact_errors) : Json::array();
    auto [upstream, own] = SplitReasons(reasons);
    m["reason_codes"] = upstream;
    m["missed_sample_count"] = collector.missed_slots;
    Json ranges = Json::array();
    for (const auto& r : collector.missed_ranges)
      ranges.push_back({{"hostname", r.hostname},
                        {"first_scrape_seq", r.first_seq},
                        {"last_scrape_seq", r.last_seq},
                        {"first_scheduled_at_unix", r.first_scheduled_unix},
                        {"last_scheduled_at_unix", r.last_scheduled_unix},
                        {"count", r.last_seq - r.first_seq + 1},
                        {"reason_codes", r.reasons}});
    m["missed_sample_ranges"] = ranges;
    m["missed_sample_ranges_truncated"] = collector.missed_ranges_truncated;
    if (clocks) {
      Json checked = Json::array(), failures = Json::array();
      for (const auto& r : *clocks) {
        checked.push_back(r.hostname);
        if (!r.verified) failures.push_back({{"hostname", r.hostname}, {"detail", r.detail}});
      }
      m["clock_sync_checked"] = checked;
      m["clock_sync_failures"] = failures;
    }
    m["gpulse_reason_codes"] = own;
    m["gpulse_window_findings"] =
        recomputed ? GpulseWindowFindingsJson(*recomputed) : Json::array();
    return m;
  }

  Status Write() const { return AtomicWriteJson(*package, kManifestFile, Manifest()); }
};

std::vector<ResolvedEndpoint> Resolve(const CollectConfig& c, Clock::time_point deadline,
                                      std::vector<std::string>& reasons, std::string& log) {
  std::vector<ResolvedEndpoint> out;
  for (const auto& ep : c.endpoints) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    auto ip = net::ResolveAddress(ep.address, std::max(left, std::chrono::milliseconds(1)));
    if (!ip.ok()) {
      AddReason(reasons, reason::kEndpointResolutionFailed);
      log += "gpulse collect: " + ep.hostname + ": " + ip.error().message + "\n";
      continue;
    }
    out.push_back({ep, *ip});
  }
  return out;
}

// Probes every reachable clock (clock_sync.h), logging one line per node. Required telemetry with
// an unverified clock aborts before anything starts.
Result<std::vector<ClockSyncResult>> CheckClocks(const CollectConfig& c, const fs::path& log_dir,
                                                 std::string& log) {
  auto root = sys::Dir::OpenRoot(log_dir, /*create=*/true);
  if (!root.ok()) return root.error();
  auto results = CheckClockSync(c, log_dir);
  if (int sig = TakeStopSignal(std::chrono::milliseconds(0)))
    return Error{ErrorCode::kUnavailable,
                 fmt::format("interrupted by signal {} during the clock-sync check; nothing was "
                             "started",
                             sig)};
  std::string unverified;
  for (const auto& r : results) {
    log += fmt::format("clock_sync_check: {} {} ({}); output in {}\n", r.hostname,
                       r.verified ? "OK" : "UNVERIFIED", r.detail, r.output.string());
    if (!r.verified) unverified += fmt::format("\n  {}: {}", r.hostname, r.detail);
  }
  if (c.required && !unverified.empty())
    return Error{ErrorCode::kUnavailable,
                 "clock_sync_check: NTP synchronisation could not be verified on:" + unverified +
                     "\ntelemetry.required is true, so nothing was started (no exporter, no "
                     "benchmark, no package). Fix NTP (timedatectl, chronyc or ntpq must vouch "
                     "for the clock), or set telemetry.clock_sync_check: false when every "
                     "timestamp comes from this host's clock."};
  return results;
}

// The files collect writes in the log directory beside the package: clock_sync_<node>.out and
// telemetry_dcgm_exporter[.<host>|.g<N>].out.
bool IsLogFileName(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  return name.size() > 4 && name.substr(name.size() - 4) == ".out" &&
         (starts("clock_sync_") || starts("telemetry_dcgm_exporter"));
}

// OK when `name` is missing; a file already there is refused (a new run never writes over one).
Status MustBeNew(const sys::Dir& dir, std::string_view name) {
  if (Status s = dir.RefuseNonRegular(name); !s.ok()) return s;
  auto type = dir.TypeOf(name);
  if (!type.ok()) return type.error();
  if (*type != sys::EntryType::kMissing)
    return InvalidArgument(dir.PathOf(name) + " already exists; use a new --log-dir");
  return Status::Ok();
}

// What a new run may find in its package directory: nothing of a previous run, no symbolic link.
Status CheckPackageEntries(const sys::Dir& package) {
  auto manifest = package.TypeOf(kManifestFile);
  if (!manifest.ok()) return manifest.error();
  if (*manifest == sys::EntryType::kRegular)
    return InvalidArgument(package.path().string() +
                           " already holds a power package; use a new --log-dir");
  for (std::string_view name : {kManifestFile, kSamplesFile, kScrapeTimingsFile})
    if (Status s = MustBeNew(package, name); !s.ok()) return s;
  auto windows = package.TypeOf(kWindowsDir);
  if (!windows.ok()) return windows.error();
  if (*windows == sys::EntryType::kSymlink) return package.RefuseNonRegular(kWindowsDir);
  if (*windows != sys::EntryType::kMissing && *windows != sys::EntryType::kDirectory)
    return InvalidArgument(package.PathOf(kWindowsDir) + " is not a directory");
  return Status::Ok();
}

// Refuses, before anything starts and without creating anything, a log directory or package a new
// run could not write safely (issue 13): a symbolic link or non-regular file where collect writes a
// log, a symlinked storage_subdir component, or a package entry CheckPackageEntries refuses. The
// opens of CreatePackage, the clock probes and the exporter launches refuse the same again.
Status CheckNewPackage(const fs::path& log_dir, const std::string& subdir) {
  auto root = sys::Dir::OpenRoot(log_dir, /*create=*/false);
  if (!root.ok()) return root.error().code == ErrorCode::kNotFound ? Status::Ok() : root.error();
  auto names = root->List();
  if (!names.ok()) return names.error();
  for (const std::string& name : *names)
    if (IsLogFileName(name))
      if (Status s = root->RefuseNonRegular(name); !s.ok()) return s;
  auto package = root->Sub(subdir, /*create=*/false);
  if (!package.ok())
    return package.error().code == ErrorCode::kNotFound ? Status::Ok() : package.error();
  return CheckPackageEntries(*package);
}

struct NewPackage {
  sys::Dir dir, windows;
  SamplesWriter samples;
  sys::UniqueFd timings;  // scrape-timings.jsonl
};

// <log_dir>/<subdir>/ with windows/, a new samples.csv (header written) and a new, empty
// scrape-timings.jsonl: every directory opened O_NOFOLLOW from its parent, every file O_EXCL.
Result<NewPackage> CreatePackage(const fs::path& log_dir, const std::string& subdir) {
  auto root = sys::Dir::OpenRoot(log_dir, /*create=*/true);
  if (!root.ok()) return root.error();
  auto dir = root->Sub(subdir, /*create=*/true);
  if (!dir.ok()) return dir.error();
  if (Status s = CheckPackageEntries(*dir); !s.ok()) return s.error();
  auto windows = dir->Sub(kWindowsDir, /*create=*/true);
  if (!windows.ok()) return windows.error();
  auto samples = SamplesWriter::Create(*dir, kSamplesFile);
  if (!samples.ok()) return samples.error();
  auto timings = dir->OpenFile(kScrapeTimingsFile, sys::OpenMode::kCreateNew);
  if (!timings.ok()) {
    (void)samples->Close();
    (void)dir->Remove(kSamplesFile);  // the header this call just wrote: nothing is lost
    return timings.error();
  }
  return NewPackage{*dir, *windows, std::move(*samples), std::move(*timings)};
}

}  // namespace

std::optional<std::string> ImageSha256(const std::string& image) {
  if (image.find("://") != std::string::npos) return std::nullopt;
  std::error_code ec;
  if (!fs::is_regular_file(image, ec)) return std::nullopt;
  auto src = OpenFileSource(image);
  if (!src.ok()) return std::nullopt;
  auto sha = Sha256OfSource(**src);
  if (!sha.ok()) return std::nullopt;
  return *sha;
}

Result<CollectFaults> ParseCollectFaults(std::string_view text) {
  CollectFaults f;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    constexpr std::string_view kStall = "stall_loop_at_stop=";
    if (item == "unreapable_child") {
      f.unreapable_child = true;
    } else if (item == "stall_diagnostics") {
      f.stall_diagnostics = true;
    } else if (item.substr(0, kStall.size()) == kStall) {
      std::string value(item.substr(kStall.size()));
      char* end = nullptr;
      double s = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(s) || s <= 0)
        return InvalidArgument("stall_loop_at_stop needs a positive number of seconds, got \"" +
                               value + "\"");
      f.stall_loop_at_stop_s = s;
    } else {
      return InvalidArgument(
          "unknown fault \"" + std::string(item) +
          "\" (known: stall_loop_at_stop=SECONDS, unreapable_child, stall_diagnostics)");
    }
  }
  return f;
}

namespace {

// Terminal status precedence: a fatal lifecycle reason -> incomplete; else required with a
// startup failure -> failed; else complete.
std::string TerminalStatus(const std::vector<std::string>& reasons, bool required) {
  if (HasAny(reasons, FatalLifecycleReasons())) return "incomplete";
  if (required && HasAny(reasons, StartupFailureReasons())) return "failed";
  return "complete";
}

struct RunState {
  bool interrupted = false;
  std::optional<ChildOutcome> child;
};

// Waits for readiness in short slices so a SIGINT/SIGTERM during startup, or a launched exporter
// that already ended (readiness is then out of reach), is noticed.
bool AwaitReadiness(Collector& collector, Clock::time_point deadline, RunState& run,
                    ExporterProcesses& exporters) {
  while (Clock::now() < deadline) {
    auto slice = std::min(deadline, Clock::now() + std::chrono::milliseconds(100));
    if (collector.WaitReady(slice)) return true;
    if (exporters.AnyEnded()) return collector.WaitReady(Clock::now());
    if (TakeStopSignal(std::chrono::milliseconds(0))) {
      run.interrupted = true;
      return false;
    }
  }
  return collector.WaitReady(Clock::now());
}

void RunWorkload(const CollectOptions& o, const fs::path& power_dir, RunState& run,
                 std::string& log) {
  if (o.bench_argv.empty()) {
    auto end = o.duration_s ? After(*o.duration_s) : Clock::time_point::max();
    while (Clock::now() < end) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (TakeStopSignal(std::min(left, std::chrono::milliseconds(200)))) {
        run.interrupted = true;
        return;
      }
    }
    return;
  }
  ChildOptions co;
  co.argv = o.bench_argv;
  co.test_unreapable = o.faults.unreapable_child;
  co.stop_stragglers = true;  // nothing the benchmark started may write after finalization
  std::string windows = fs::absolute(power_dir / kWindowsDir).string();
  co.env = {{std::string(kWindowDirEnv), windows},
            {std::string(kUpstreamWindowDirEnv), windows},
            {std::string(kResultRootEnv), fs::absolute(o.log_dir).string()}};
  auto pid = SpawnChild(co);
  if (!pid.ok()) {
    log += "gpulse collect: " + pid.error().message + "\n";
    ChildOutcome none;
    none.reaped = true;
    none.exit_code = 127;
    run.child = none;
    return;
  }
  run.child = WaitChild(*pid, co);
  if (run.child->stop_signal) run.interrupted = true;
  if (run.child->stragglers)
    log += "gpulse collect: the benchmark left processes running in its process group; they " +
           std::string(run.child->reaped ? "were stopped and reaped" : "could not be reaped") +
           " before the package was finalized\n";
}

}  // namespace

Result<CollectOutcome> RunCollect(const CollectOptions& o) {
  const CollectConfig& c = o.config;
  Session s{.o = o, .power_dir = o.log_dir / c.storage_subdir};
  if (Status st = CheckNewPackage(o.log_dir, c.storage_subdir); !st.ok()) return st.error();
  std::string log;
  if (c.clock_sync_check) {
    auto checked = CheckClocks(c, o.log_dir, log);
    if (!checked.ok()) return checked.error();
    s.clocks = std::move(*checked);
    if (std::any_of(s.clocks->begin(), s.clocks->end(), [](auto& r) { return !r.verified; }))
      AddReason(s.reasons, reason::kClockSyncUnverified);
  }
  auto package = CreatePackage(o.log_dir, c.storage_subdir);
  if (!package.ok()) return package.error();
  s.package = package->dir;
  s.started_at = UnixNow();
  if (Status st = s.Write(); !st.ok()) return st.error();
  // From here every path reaches the terminal manifest, which waits for the digest.
  s.image_sha = std::async(std::launch::async, ImageSha256, c.exporter.container_image).share();

  ExporterProcesses exporters;
  for (const auto& failure : exporters.Launch(PlanExporterLaunch(c, o.log_dir))) {
    AddReason(s.reasons, reason::kExporterLaunchFailed);
    log += "gpulse collect: " + failure + "\n";
  }
  if (!exporters.empty()) {
    std::istringstream lines(exporters.Describe());
    for (std::string line; std::getline(lines, line);) log += "gpulse collect: " + line + "\n";
    exporters.Watch(std::chrono::milliseconds(
        std::min<int64_t>(1000, static_cast<int64_t>(c.interval_s * 1000))));
  }

  auto startup_deadline = After(c.startup_timeout_s);
  auto endpoints = Resolve(c, startup_deadline, s.reasons, log);
  Collector collector(c, std::move(endpoints), std::move(package->samples),
                      std::move(package->timings));
  if (o.faults.stall_diagnostics) collector.InjectDiagnosticsStall();
  if (std::string why = collector.WriteWith(o.io_uring); !why.empty())
    log += "gpulse collect: requests are written with send(2), not io_uring (" + why + ")\n";
  if (int err = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3); err >= 0)
    collector.ReportFailuresTo(std::make_unique<sys::Fd>(err));
  collector.Start();
  s.status = "running";
  if (Status st = s.Write(); !st.ok()) log += "gpulse collect: " + st.error().message + "\n";

  RunState run;
  // Required telemetry that already failed to launch or resolve cannot become ready: fail fast.
  bool doomed = c.required && HasAny(s.reasons, StartupFailureReasons());
  bool ready = !doomed && AwaitReadiness(collector, startup_deadline, run, exporters);
  if (!ready && !run.interrupted && !doomed) {
    AddReason(s.reasons, reason::kExporterStartupTimeout);
    log += exporters.AnyEnded()
               ? "gpulse collect: a launched exporter ended before every expected GPU answered "
                 "in one cycle: readiness is out of reach\n"
               : "gpulse collect: not every expected GPU answered in one cycle before "
                 "startup_timeout_seconds\n";
  }
  bool blocked = c.required && (!ready || HasAny(s.reasons, StartupFailureReasons()));
  if (blocked && !run.interrupted)
    log += "gpulse collect: required telemetry is not ready: the benchmark is not started\n";
  if (!blocked && !run.interrupted) RunWorkload(o, s.power_dir, run, log);

  // Stop: final bracketing scrape and join under one absolute deadline.
  auto join_deadline = After(c.join_timeout_s);
  if (o.faults.stall_loop_at_stop_s > 0)
    collector.InjectLoopStall(
        std::chrono::milliseconds(static_cast<int64_t>(o.faults.stall_loop_at_stop_s * 1000)));
  collector.Stop(join_deadline);
  // Launched exporters outlive the final bracketing scrape; one that ended before is a failure.
  for (const auto& exited : exporters.StopWatching()) {
    AddReason(s.reasons, reason::kExporterExited);
    log += "gpulse collect: " + exited + "\n";
  }
  if (run.interrupted) AddReason(s.reasons, reason::kCollectorInterrupted);
  if (run.child) {
    if (!run.child->reaped) {
      AddReason(s.reasons, reason::kBenchmarkChildReapTimeout);
    } else if (!run.child->force_killed) {
      auto converted = ConvertRunningWindows(package->windows);
      if (!converted.ok()) log += "gpulse collect: " + converted.error().message + "\n";
    }
  }
  Status closed = collector.CloseFiles(join_deadline);
  if (!closed.ok()) {
    AddReason(s.reasons, reason::kCollectorException);
    log += "gpulse collect: " + closed.error().message + "\n";
  }
  exporters.StopAll(std::chrono::milliseconds(5'000));  // after the join budget's own work
  s.collector = collector.summary();
  for (const auto& r : s.collector.reasons) AddReason(s.reasons, r);
  if (s.collector.sample_write_error)
    log += "gpulse collect: samples.csv: " + *s.collector.sample_write_error + "\n";
  s.stopped_at = UnixNow();

  // Finalization through the one rule engine.
  RecomputeInputs in{c.topology, c.interval_s, s.power_dir, o.log_dir, 1};
  s.recomputed = Recompute(in);
  const Recomputation& r = *s.recomputed;
  s.sha = r.samples.sha256_hex;
  if (!s.sha && r.samples.present) AddReason(s.reasons, reason::kSamplesDigestUnavailable);
  std::vector<std::string> runtime = s.reasons;
  for (const auto& d : r.reasons) AddReason(s.reasons, d);
  s.status = TerminalStatus(s.reasons, c.required);
  VerdictInputs v{s.status == "complete", c.required, runtime, s.sha.has_value()};
  s.publication_valid = PublicationValid(r, v);
  s.image_sha.wait();
  Status written = s.Write();

  CollectOutcome out;
  out.status = s.status;
  out.publication_valid = *s.publication_valid;
  out.reasons = s.reasons;
  int bench = run.child ? run.child->ShellStatus() : (run.interrupted ? 130 : 0);
  bool operational = HasAny(s.reasons, OperationalFailureReasons()) || !written.ok();
  bool nonzero = operational || (c.required && !out.publication_valid);
  out.exit_code = nonzero && bench == 0 ? 1 : bench;
  if (!written.ok()) log += "gpulse collect: " + written.error().message + "\n";
  std::string lags;
  auto lag_text = [](const char* what, const LagHistogram& h) {
    return fmt::format(", {} p50 {:.1f} ms p99 {:.1f} ms max {:.1f} ms", what,
                       h.Percentile(0.5) * 1e3, h.Percentile(0.99) * 1e3, h.max() * 1e3);
  };
  if (s.collector.schedule_lag.count() > 0)
    lags += lag_text("schedule lag", s.collector.schedule_lag);
  if (s.collector.steady_schedule_lag.count() > 0)
    lags += lag_text("after the first cycle", s.collector.steady_schedule_lag);
  std::string reasons;
  for (const auto& x : s.reasons) reasons += (reasons.empty() ? "" : ",") + x;
  out.summary =
      log + fmt::format(
                "gpulse collect: status {}, publication_valid {}, {} cycles, {} rows, "
                "{} missed slots{}; reasons [{}]; package {}\n",
                s.status, out.publication_valid ? "true" : "false", s.collector.scrape_count,
                r.samples.data_rows, s.collector.missed_slots, lags, reasons, s.power_dir.string());
  return out;
}

}  // namespace gpulse::power
