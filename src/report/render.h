// Human-readable renderings of a run: the text report (the upstream inferscope layout, extended
// with energy and job statistics) and a self-contained HTML report with inline SVG plots.
#pragma once

#include <deque>
#include <string>

#include "report/derive.h"
#include "report/html_plot.h"
#include "report/run.h"

namespace gpulse::report {

std::string RenderText(const Run& run, const Report& report);
std::string RenderHtml(const Run& run, const Report& report);

// Whether the measured PID looks like a launcher whose children do the work (recorded without
// --include-descendants, RSS under 10 MiB, one thread, almost no CPU time): the text report warns.
bool LooksLikeWrapper(const RunInfo& info, const ResourceReport& r);

// The HTML report's CPU plot: % of one core over spans of at least kMinCpuSpanTicks clock ticks.
// CPU time counts in whole ticks (10 ms at 100 Hz), so a shorter span reads one tick as a spike of
// hundreds of % (issue 40: CMD exiting 5 ms after a tick); a short final span joins the one before.
inline constexpr double kMinCpuSpanTicks = 10;
std::vector<html::Point> CpuPercentSeries(const std::deque<ResourceSample>& samples,
                                          long ticks_per_second);

// "0 B", "512 KiB", "37 MiB", "1.50 GiB": binary units, integer division below GiB.
std::string FormatBytes(std::uint64_t bytes);

}  // namespace gpulse::report
