// Human-readable renderings of a run: the text report (the upstream inferscope layout, extended
// with energy and job statistics) and a self-contained HTML report with inline SVG plots.
#pragma once

#include <string>

#include "report/derive.h"
#include "report/run.h"

namespace gpulse::report {

std::string RenderText(const Run& run, const Report& report);
std::string RenderHtml(const Run& run, const Report& report);

// Whether the measured PID looks like a launcher whose children do the work (recorded without
// --include-descendants, RSS under 10 MiB, one thread, almost no CPU time): the text report warns.
bool LooksLikeWrapper(const RunInfo& info, const ResourceReport& r);

// "0 B", "512 KiB", "37 MiB", "1.50 GiB": binary units, integer division below GiB.
std::string FormatBytes(std::uint64_t bytes);

}  // namespace gpulse::report
