// The pieces run.json is made of, shared with the run journal (report/journal.h), which streams the
// same objects one per line while a run is recorded: one shape for a sample wherever it is written.
// The parse functions throw nlohmann's exceptions (or std::out_of_range / std::runtime_error) on a
// missing key or a wrong type; their callers turn that into an error value naming the file.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "report/run.h"

namespace gpulse::report {

// Writing.
nlohmann::ordered_json RunInfoJson(const RunInfo& r);
nlohmann::ordered_json DevicesJson(const std::vector<DeviceInfo>& devices);
nlohmann::ordered_json EntitiesJson(const std::vector<Entity>& entities,
                                    std::int64_t start_unix_ns);
nlohmann::ordered_json AbsenceListJson(const std::vector<TimelineAbsence>& absences);
nlohmann::ordered_json XidJson(const XidEvent& x);
nlohmann::ordered_json GpuProcessesJson(const std::vector<GpuProcess>& processes);
void AppendGpuSampleJson(fmt::memory_buffer& b, const GpuSample& s);
void AppendInstanceSampleJson(fmt::memory_buffer& b, const InstanceSample& s);
void AppendResourceSampleJson(fmt::memory_buffer& b, const ResourceSample& s);

// Reading.
// nlohmann's get<int>() of a JSON float is a plain cast, undefined behaviour when the number is out
// of the integer's range ({"schema_version": 2e84}, or -1.5 for an unsigned field; found by
// fuzzing, issue 13). Integers are read only from JSON integers that fit; anything else throws, and
// the caller turns it into an error naming the file. Every reader of run.json and the journal takes
// its numbers through it.
template <typename T>
T JsonGet(const nlohmann::json& j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    bool fits = false;
    if (j.is_number_unsigned()) {
      fits = j.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    } else if (j.is_number_integer()) {
      std::int64_t v = j.get<std::int64_t>();
      fits =
          (std::is_signed_v<T> || v >= 0) &&
          static_cast<long double>(v) >= static_cast<long double>(std::numeric_limits<T>::min()) &&
          static_cast<long double>(v) <= static_cast<long double>(std::numeric_limits<T>::max());
    }
    if (!fits) throw std::out_of_range("expected an integer that fits, got " + j.dump());
  }
  return j.get<T>();
}

RunInfo ParseRunInfoJson(const nlohmann::json& r);
DeviceInfo ParseDeviceJson(const nlohmann::json& d);
std::vector<Entity> ParseEntitiesJson(const nlohmann::json& list);
std::vector<TimelineAbsence> ParseAbsenceListJson(const nlohmann::json& list);
GpuSample ParseGpuSampleJson(const nlohmann::json& s);
InstanceSample ParseInstanceSampleJson(const nlohmann::json& s);
ResourceSample ParseResourceSampleJson(const nlohmann::json& s);
XidEvent ParseXidJson(const nlohmann::json& x);
std::vector<GpuProcess> ParseGpuProcesses(const nlohmann::json& list);

}  // namespace gpulse::report
