// The power-package wire contract: constants and the stable reason-code strings of the dcgm-power
// artifact format (schema_version 1). The strings are a public interface shared with packages
// written by other producers: never rename one. How each reason is classified (disk-derived,
// fatal, the upstream's enum) is the rule engine's: power/rules/reasons.h.
// Thread-safe: everything here is immutable.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpulse::power {

inline constexpr int kSchemaVersion = 1;
inline constexpr std::string_view kProducer = "srt-slurm.dcgm-power";
inline constexpr std::string_view kPowerMetric = "DCGM_FI_DEV_POWER_USAGE";
inline constexpr std::string_view kPowerUnit = "W";
inline constexpr std::string_view kPowerScope = "gpu_device_board_as_reported_by_dcgm";
inline constexpr std::string_view kClockSource = "head_node_unix_clock";
inline constexpr std::string_view kManifestFile = "manifest.json";
inline constexpr std::string_view kSamplesFile = "samples.csv";
inline constexpr std::string_view kWindowsDir = "windows";
inline constexpr std::string_view kBenchmarkTypeSaBench = "sa-bench";
inline constexpr std::string_view kSamplesHeader =
    "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w";

// Writer side (gpulse collect, gpulse window, contrib/gpulse_window.py).
inline constexpr std::string_view kScrapeTimingsFile = "scrape-timings.jsonl";
inline constexpr std::string_view kWindowDirEnv = "GPULSE_MEASUREMENT_WINDOW_DIR";
inline constexpr std::string_view kUpstreamWindowDirEnv = "SRT_MEASUREMENT_WINDOW_DIR";
inline constexpr std::string_view kResultRootEnv = "GPULSE_RESULT_ROOT";
inline constexpr std::string_view kInterruptedWindowReason =
    "benchmark did not reach a formal end boundary";
inline constexpr std::string_view kDefaultExporterCommand =
    "dcgm-exporter --collect-interval=100 --address :{port}";
inline constexpr double kCollectCycleGraceSeconds = 1.0;  // cycle deadline = 2 * timeout + this
inline constexpr size_t kMaxPendingDiagnostics = 128;

inline constexpr double kMaxSampleGapSeconds = 3.0;
inline constexpr double kMaxSampleIntervalSeconds = 3.0;
inline constexpr double kMaxMissingIntervalFraction = 0.05;
inline constexpr double kClockToleranceSeconds = 0.5;
inline constexpr double kClockToleranceFraction = 0.01;

inline constexpr std::string_view kRoles[] = {"prefill", "decode", "agg"};
bool IsKnownRole(std::string_view role);

// Reason codes (exact upstream strings).
namespace reason {
// startup
inline constexpr std::string_view kExporterStartupTimeout = "exporter_startup_timeout";
inline constexpr std::string_view kExporterLaunchFailed = "exporter_launch_failed";
inline constexpr std::string_view kEndpointResolutionFailed = "endpoint_resolution_failed";
// exporter and endpoint
inline constexpr std::string_view kExporterExited = "exporter_exited";
inline constexpr std::string_view kEndpointTimeout = "endpoint_timeout";
inline constexpr std::string_view kEndpointHttpError = "endpoint_http_error";
inline constexpr std::string_view kEndpointParseError = "endpoint_parse_error";
// scrape content
inline constexpr std::string_view kPowerMetricMissing = "power_metric_missing";
inline constexpr std::string_view kDuplicatePowerMetric = "duplicate_power_metric";
inline constexpr std::string_view kGpuIndexMissing = "gpu_index_missing";
inline constexpr std::string_view kGpuUuidMissing = "gpu_uuid_missing";
inline constexpr std::string_view kInvalidPowerValue = "invalid_power_value";
inline constexpr std::string_view kMigInstanceUnsupported = "mig_instance_unsupported";
// samples.csv
inline constexpr std::string_view kSamplesCsvMissing = "samples_csv_missing";
inline constexpr std::string_view kSamplesCsvHeaderMismatch = "samples_csv_header_mismatch";
inline constexpr std::string_view kSamplesCsvMalformed = "samples_csv_malformed";
inline constexpr std::string_view kDuplicateSampleRow = "duplicate_sample_row";
inline constexpr std::string_view kTimestampNonMonotonic = "timestamp_non_monotonic";
inline constexpr std::string_view kSamplesDigestUnavailable = "samples_digest_unavailable";
// devices and topology
inline constexpr std::string_view kUnexpectedDevice = "unexpected_device";
inline constexpr std::string_view kExpectedDeviceMissing = "expected_device_missing";
inline constexpr std::string_view kGpuUuidChanged = "gpu_uuid_changed";
inline constexpr std::string_view kConflictingWorkerRoles = "conflicting_worker_roles";
inline constexpr std::string_view kConflictingHetGroups = "conflicting_het_groups";
// collector
inline constexpr std::string_view kCollectorException = "collector_exception";
inline constexpr std::string_view kCollectorInterrupted = "collector_interrupted";
inline constexpr std::string_view kCollectorJoinTimeout = "collector_join_timeout";
inline constexpr std::string_view kBenchmarkChildReapTimeout = "benchmark_child_reap_timeout";
// measurement windows
inline constexpr std::string_view kWindowMissing = "measurement_window_missing";
inline constexpr std::string_view kWindowUnexpected = "measurement_window_unexpected";
inline constexpr std::string_view kWindowDuplicate = "measurement_window_duplicate";
inline constexpr std::string_view kWindowMalformed = "measurement_window_malformed";
inline constexpr std::string_view kWindowArtifactPathInvalid =
    "measurement_window_artifact_path_invalid";
inline constexpr std::string_view kWindowIncomplete = "measurement_window_incomplete";
inline constexpr std::string_view kWindowResultMissing = "measurement_window_result_missing";
inline constexpr std::string_view kWindowResultMismatch = "measurement_window_result_mismatch";
inline constexpr std::string_view kWindowResultPathInvalid =
    "measurement_window_result_path_invalid";
inline constexpr std::string_view kWindowClockMismatch = "measurement_window_clock_mismatch";
inline constexpr std::string_view kWindowNotBracketed = "measurement_window_not_bracketed";
// coverage
inline constexpr std::string_view kSampleGapExceeded = "sample_gap_exceeded";
// gpulse's own findings, beyond the upstream's v1 enum (ADR 0016): they are written to
// `gpulse_reason_codes` and `gpulse_window_findings`, never to the upstream's `reason_codes`.
inline constexpr std::string_view kSampleLossExceeded = "sample_loss_exceeded";        // disk
inline constexpr std::string_view kSampleScheduleOverrun = "sample_schedule_overrun";  // runtime
inline constexpr std::string_view kClockSyncUnverified = "clock_sync_unverified";      // runtime
}  // namespace reason

// A non-empty relative POSIX path that does not start with '/' or '~' and has no ".." or empty
// component. "a/b" is safe; "", "/a", "~/a", "a/../b", "a//b" are not.
bool IsSafeRelativeSubpath(std::string_view path);

}  // namespace gpulse::power
