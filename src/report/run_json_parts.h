// The pieces run.json is made of, shared with the run journal (report/journal.h), which streams the
// same objects one per line while a run is recorded: one shape for a sample wherever it is written.
// The parse functions throw nlohmann's exceptions (or std::out_of_range / std::runtime_error) on a
// missing key or a wrong type; their callers turn that into an error value naming the file.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "report/run.h"

namespace gpulse::report {

// Writing.
nlohmann::ordered_json RunInfoJson(const RunInfo& r);
nlohmann::ordered_json DevicesJson(const std::vector<DeviceInfo>& devices);
nlohmann::ordered_json EntitiesJson(const std::vector<Entity>& entities, std::int64_t start_unix_ns);
nlohmann::ordered_json AbsenceListJson(const std::vector<TimelineAbsence>& absences);
nlohmann::ordered_json XidJson(const XidEvent& x);
nlohmann::ordered_json GpuProcessesJson(const std::vector<GpuProcess>& processes);
void AppendGpuSampleJson(fmt::memory_buffer& b, const GpuSample& s);
void AppendInstanceSampleJson(fmt::memory_buffer& b, const InstanceSample& s);
void AppendResourceSampleJson(fmt::memory_buffer& b, const ResourceSample& s);

// Reading.
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
