#include "power/rules/reasons.h"

#include <algorithm>
#include <iterator>

#include "power/readers/contract.h"

namespace gpulse::power {
namespace {

using namespace reason;

constexpr std::string_view kDisk[] = {
    kSamplesCsvMissing,
    kSamplesCsvHeaderMismatch,
    kSamplesCsvMalformed,
    kDuplicateSampleRow,
    kTimestampNonMonotonic,
    kUnexpectedDevice,
    kExpectedDeviceMissing,
    kGpuUuidChanged,
    kConflictingWorkerRoles,
    kConflictingHetGroups,
    kWindowMissing,
    kWindowUnexpected,
    kWindowDuplicate,
    kWindowMalformed,
    kWindowArtifactPathInvalid,
    kWindowIncomplete,
    kWindowResultMissing,
    kWindowResultMismatch,
    kWindowResultPathInvalid,
    kWindowClockMismatch,
    kWindowNotBracketed,
    kSampleGapExceeded,
    kSampleLossExceeded,
};

constexpr std::string_view kRuntime[] = {
    kExporterStartupTimeout, kExporterLaunchFailed,     kEndpointResolutionFailed,
    kExporterExited,         kEndpointTimeout,          kEndpointHttpError,
    kEndpointParseError,     kPowerMetricMissing,       kDuplicatePowerMetric,
    kGpuIndexMissing,        kGpuUuidMissing,           kInvalidPowerValue,
    kMigInstanceUnsupported, kSamplesDigestUnavailable, kCollectorException,
    kCollectorInterrupted,   kCollectorJoinTimeout,     kBenchmarkChildReapTimeout,
    kSampleScheduleOverrun,  kClockSyncUnverified,
};

constexpr std::string_view kAll[] = {
    kExporterStartupTimeout,
    kExporterLaunchFailed,
    kEndpointResolutionFailed,
    kExporterExited,
    kEndpointTimeout,
    kEndpointHttpError,
    kEndpointParseError,
    kPowerMetricMissing,
    kDuplicatePowerMetric,
    kGpuIndexMissing,
    kGpuUuidMissing,
    kInvalidPowerValue,
    kMigInstanceUnsupported,
    kSamplesCsvMissing,
    kSamplesCsvHeaderMismatch,
    kSamplesCsvMalformed,
    kDuplicateSampleRow,
    kTimestampNonMonotonic,
    kSamplesDigestUnavailable,
    kUnexpectedDevice,
    kExpectedDeviceMissing,
    kGpuUuidChanged,
    kConflictingWorkerRoles,
    kConflictingHetGroups,
    kCollectorException,
    kCollectorInterrupted,
    kCollectorJoinTimeout,
    kBenchmarkChildReapTimeout,
    kWindowMissing,
    kWindowUnexpected,
    kWindowDuplicate,
    kWindowMalformed,
    kWindowArtifactPathInvalid,
    kWindowIncomplete,
    kWindowResultMissing,
    kWindowResultMismatch,
    kWindowResultPathInvalid,
    kWindowClockMismatch,
    kWindowNotBracketed,
    kSampleGapExceeded,
    kSampleLossExceeded,
    kSampleScheduleOverrun,
    kClockSyncUnverified,
};
constexpr size_t kUpstreamCount = std::size(kAll) - 3;  // the three gpulse codes come last
static_assert(kAll[kUpstreamCount] == kSampleLossExceeded);

constexpr std::string_view kFatal[] = {kExporterExited, kCollectorException, kCollectorInterrupted,
                                       kCollectorJoinTimeout, kBenchmarkChildReapTimeout};
constexpr std::string_view kOperational[] = {kBenchmarkChildReapTimeout, kCollectorJoinTimeout};
constexpr std::string_view kStartup[] = {kExporterStartupTimeout, kExporterLaunchFailed,
                                         kEndpointResolutionFailed};
constexpr std::string_view kUnrecoverable[] = {kExporterLaunchFailed, kEndpointResolutionFailed};
constexpr std::string_view kSample[] = {kSamplesCsvMissing, kSamplesCsvHeaderMismatch,
                                        kSamplesCsvMalformed, kDuplicateSampleRow,
                                        kTimestampNonMonotonic};

}  // namespace

std::span<const std::string_view> AllReasonCodes() { return kAll; }
std::span<const std::string_view> UpstreamReasonCodes() {
  return std::span<const std::string_view>(kAll).first(kUpstreamCount);
}
std::span<const std::string_view> GpulseReasonCodes() {
  return std::span<const std::string_view>(kAll).subspan(kUpstreamCount);
}
std::span<const std::string_view> DiskDerivedReasonCodes() { return kDisk; }
std::span<const std::string_view> RuntimeOnlyReasonCodes() { return kRuntime; }
std::span<const std::string_view> FatalLifecycleReasons() { return kFatal; }
std::span<const std::string_view> OperationalFailureReasons() { return kOperational; }
std::span<const std::string_view> StartupFailureReasons() { return kStartup; }
std::span<const std::string_view> UnrecoverableStartupReasons() { return kUnrecoverable; }
std::span<const std::string_view> SampleReasons() { return kSample; }

bool Contains(std::span<const std::string_view> set, std::string_view code) {
  return std::find(set.begin(), set.end(), code) != set.end();
}
bool IsKnownReason(std::string_view code) { return Contains(kAll, code); }
bool IsUpstreamReason(std::string_view code) { return Contains(UpstreamReasonCodes(), code); }
bool IsGpulseReason(std::string_view code) { return Contains(GpulseReasonCodes(), code); }
bool IsDiskDerived(std::string_view code) { return Contains(kDisk, code); }

}  // namespace gpulse::power
