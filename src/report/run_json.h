// run.json: the canonical, self-describing record of a run (docs/schema/run.schema.json). Writing
// streams the timelines (a run can hold millions of samples) and embeds the derived sections;
// reading restores the Run exactly, so every report can be re-rendered from run.json alone.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_limits.h"
#include "core/result.h"
#include "report/derive.h"
#include "report/run.h"

namespace gpulse::report {

// 2: the five ADR-007 sample readings may be null; entities, instance timeline and absences added.
// 3: inferscope's sample-only report fields at the top level (pid, include_descendants,
//    sample_period_ms, duration_secs, reference_instant_unix_ns); energy in whole millijoules with
//    inferscope's source names and gpu_timeline.energy[]; `gpu` and `resource` null without
//    samples; run.pid, run.complete; named job-statistics processes.
inline constexpr int kRunSchemaVersion = 3;

// The timeline samples already formatted, one view per sample object in timeline order: the run
// journal holds exactly the text run.json needs (report/journal.h), so the end of a run copies it
// instead of formatting a million samples a second time. Used only when every count matches.
struct FormattedTimelines {
  std::vector<std::string_view> resource, instance, gpu;
};

// Writes run.json for `run` and its derived `report` to `out`. Fails on a write error.
Status WriteRunJson(const Run& run, const Report& report, std::FILE* out,
                    const FormattedTimelines* formatted = nullptr);

// Writes to `path` atomically (temporary file in the same directory, then rename).
Status WriteRunJsonFile(const Run& run, const Report& report, const std::string& path,
                        const FormattedTimelines* formatted = nullptr);

// Reads the raw parts of run.json (run, devices, timelines, events) back into a Run. Derived
// sections are ignored: callers derive them again. Errors name the file and the problem. Only a
// regular file is read, and kRunJsonLimits are checked before parsing (docs/formats.md "Limits").
Result<Run> ReadRunJsonFile(const std::string& path);
// The same for text already read; `origin` names it in errors.
Result<Run> ParseRunJson(std::string_view text, const std::string& origin);

// One device's `job_statistics` entry of run.json, as JSON text (the agent's job records embed it:
// docs/agent.md, "Job statistics").
std::string JobStatisticsJson(const DeviceReport& d);

// 4 GiB and 256 million values: about ten million GPU samples, a day of 8 GPUs at 10 Hz.
inline constexpr JsonLimits kRunJsonLimits{4ull << 30, 64, 256'000'000};

}  // namespace gpulse::report
