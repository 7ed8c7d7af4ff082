#include "power/collector/scrape_parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "power/readers/contract.h"
#include "prom/parser.h"

namespace gpulse::power {
namespace {

void Add(std::vector<std::string>& list, std::string_view r) {
  if (std::find(list.begin(), list.end(), r) == list.end()) list.emplace_back(r);
}

std::optional<int64_t> GpuIndex(const std::string* label) {
  if (!label || label->empty()) return std::nullopt;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(label->data(), label->data() + label->size(), v);
  if (ec != std::errc() || end != label->data() + label->size() || v < 0) return std::nullopt;
  return v;
}

bool NonEmpty(const std::string* label) { return label && !label->empty(); }

bool MetricNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

// Only DCGM_FI_DEV_POWER_USAGE sample lines go through the streaming parser (a full exporter
// scrape is ~160 samples, 8 of them power); every other line gets a cheap shape check: blank, a
// comment, or starting like a metric name. A NUL byte anywhere means the body is not text.
Status ParsePowerLines(std::string_view body, prom::ParseCallbacks cb) {
  if (body.find('\0') != std::string_view::npos)
    return InvalidArgument("the body contains a NUL byte: not the text exposition format");
  prom::Parser parser(std::move(cb));
  size_t line_no = 0;
  while (!body.empty()) {
    size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    std::string_view with_newline = nl == std::string_view::npos ? body : body.substr(0, nl + 1);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    if (!MetricNameStart(line.front()))
      return InvalidArgument("line " + std::to_string(line_no) + ": not a sample line");
    if (line.size() > kPowerMetric.size() && line.substr(0, kPowerMetric.size()) == kPowerMetric &&
        (line[kPowerMetric.size()] == '{' || line[kPowerMetric.size()] == ' ' ||
         line[kPowerMetric.size()] == '\t')) {  // a tab is a blank too (found by fuzzing, issue 13)
      if (Status st = parser.Feed(with_newline); !st.ok()) return st;
    }
  }
  return parser.Finish();
}

}  // namespace

ScrapeParse ParsePowerScrape(std::string_view body) {
  ScrapeParse out;
  bool seen_metric = false;
  std::map<int64_t, std::vector<GpuPower>> by_index;
  prom::ParseCallbacks cb;
  cb.on_sample = [&](const prom::ParsedSample& s) {
    if (s.name != kPowerMetric) return;
    seen_metric = true;
    if (NonEmpty(s.Label("GPU_I_ID")) || NonEmpty(s.Label("GPU_I_PROFILE"))) {
      Add(out.reasons, reason::kMigInstanceUnsupported);
      return;
    }
    auto index = GpuIndex(s.Label("gpu"));
    if (!index) {
      Add(out.reasons, reason::kGpuIndexMissing);
      return;
    }
    const std::string* uuid = s.Label("UUID");
    if (!NonEmpty(uuid)) {
      Add(out.reasons, reason::kGpuUuidMissing);
      return;
    }
    if (!std::isfinite(s.value) || s.value < 0) {
      Add(out.reasons, reason::kInvalidPowerValue);
      return;
    }
    by_index[*index].push_back({*index, *uuid, s.value});
  };
  Status st = ParsePowerLines(body, std::move(cb));
  if (!st.ok()) {
    out = ScrapeParse{};
    out.reasons.emplace_back(reason::kEndpointParseError);
    out.parse_error = st.error().message;
    return out;
  }
  if (!seen_metric) Add(out.reasons, reason::kPowerMetricMissing);
  for (auto& [index, rows] : by_index) {
    if (rows.size() > 1) {
      Add(out.reasons, reason::kDuplicatePowerMetric);
      continue;
    }
    out.gpus.push_back(std::move(rows.front()));
  }
  return out;
}

}  // namespace gpulse::power
