#include "power/scrape_parse.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "power/contract.h"
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
  Status st = prom::ParseExposition(body, std::move(cb));
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
