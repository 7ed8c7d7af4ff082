// How each reason code of the wire contract (power/readers/contract.h) is classified: the
// upstream's v1 enum and gpulse's own codes, disk-derived and runtime-only, and the lifecycle
// groups that decide a manifest's terminal status and a job's exit code.
// Thread-safe: everything here is immutable.
#pragma once

#include <span>
#include <string_view>

namespace gpulse::power {

// Every known reason code, in declaration order: the upstream's v1 enum, then gpulse's own.
std::span<const std::string_view> AllReasonCodes();
// The upstream's v1 enum (NVIDIA/srt-slurm pull request 291, contract.py `Reason`): the only
// codes a manifest's `reason_codes`, `window_validations` and `artifact_errors` may carry.
std::span<const std::string_view> UpstreamReasonCodes();
// gpulse's findings beyond that enum: `gpulse_reason_codes` and `gpulse_window_findings`.
std::span<const std::string_view> GpulseReasonCodes();
// Recomputable from the files of a package (samples.csv, windows/, result files).
std::span<const std::string_view> DiskDerivedReasonCodes();
// Everything else: only the live job could observe these (HTTP, exporter, collector, digest I/O).
std::span<const std::string_view> RuntimeOnlyReasonCodes();
// A terminal manifest carrying one of these is `incomplete`.
std::span<const std::string_view> FatalLifecycleReasons();
// Fail the job in either mode.
std::span<const std::string_view> OperationalFailureReasons();
std::span<const std::string_view> StartupFailureReasons();
// Startup failures that a best-effort run cannot recover from.
std::span<const std::string_view> UnrecoverableStartupReasons();
// samples.csv reader reasons.
std::span<const std::string_view> SampleReasons();

bool IsKnownReason(std::string_view code);
bool IsUpstreamReason(std::string_view code);
bool IsGpulseReason(std::string_view code);
bool IsDiskDerived(std::string_view code);
bool Contains(std::span<const std::string_view> set, std::string_view code);

}  // namespace gpulse::power
