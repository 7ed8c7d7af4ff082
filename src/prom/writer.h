// Writes the Prometheus text exposition format, version 0.0.4: HELP/TYPE lines once per family, one
// line per sample, label values and help texts escaped as the format requires. No timestamps (the
// scraper stamps samples), no OpenMetrics `# EOF`.
//
// The functions append to a caller-owned std::string so a response can be built without
// intermediate copies; a label set that repeats across families (a GPU's identity) is rendered once
// with RenderLabels and reused. Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/fields.h"

namespace gpulse::prom {

inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

struct Label {
  std::string_view name;
  std::string_view value;
};

// How a sample value prints. kInteger rounds to the nearest integer ("%d"), kFixed prints six
// decimals ("%f", as dcgm-exporter does for DCGM doubles), kShortest the shortest round-trip form.
// NaN and infinities print as NaN, +Inf, -Inf whatever the format.
enum class ValueFormat { kInteger, kFixed, kShortest };

bool IsValidMetricName(std::string_view name);  // [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidLabelName(std::string_view name);   // [a-zA-Z_][a-zA-Z0-9_]*, not starting with __

// Label value escaping: backslash, double quote and newline; a value that is not valid UTF-8 (a
// string from a driver) has each bad byte replaced by U+FFFD, so the page always parses.
void AppendEscapedLabelValue(std::string& out, std::string_view value);
// HELP escaping: backslash and newline.
void AppendEscapedHelp(std::string& out, std::string_view help);

// `name="value",name="value"` without braces; "" for no labels.
// REQUIRES: every name IsValidLabelName.
std::string RenderLabels(std::span<const Label> labels);

// "# HELP name help\n# TYPE name gauge\n". The HELP line keeps its separating space when `help` is
// empty, as dcgm-exporter writes it.
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        PromType type);

// `name{rendered_labels} value\n`, or `name value\n` when rendered_labels is empty. `extra`, when
// not empty, is appended inside the braces after rendered_labels (already rendered, e.g.
// `xid="94"`).
void AppendSample(std::string& out, std::string_view name, std::string_view rendered_labels,
                  std::string_view extra, double value, ValueFormat format);

void AppendValue(std::string& out, double value, ValueFormat format);

}  // namespace gpulse::prom
