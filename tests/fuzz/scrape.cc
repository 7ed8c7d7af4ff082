// The collector's scrape parser (src/power/scrape_parse.h) over a hostile exporter body: its result
// must keep the documented shape (rows ordered by gpu index, one per index, each with a UUID and a
// finite non-negative value; an endpoint_parse_error with no rows and a message), and it is checked
// against the whole-body exposition parser: when the whole body is valid exposition text whose
// every line is blank, a comment or starts like a metric name (the shape the scrape parser checks
// without parsing), the scrape parser must accept it and read the same rows and reasons from it
// as the rules in scrape_parse.h give over the DCGM_FI_DEV_POWER_USAGE samples of the whole parse.
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "power/collector/scrape_parse.h"
#include "power/readers/contract.h"
#include "prom/parser.h"

using namespace gpulse;
using namespace gpulse::power;

namespace {

// regressions/scrape/power-name-then-*: the scrape parser fed only lines where the power metric's
// name is followed by '{' or ' ' (not a tab), and the exposition parser read
// "DCGM_FI_DEV_POWER_USAGE.5" as the metric with value 0.5; both fixed.

bool ShapeOk(std::string_view body) {
  if (body.find('\0') != std::string_view::npos) return false;
  while (!body.empty()) {
    std::size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view() : body.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;
    char c = line.front();
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':')) return false;
  }
  return true;
}

const std::string* Label(const prom::ParsedSample& s, std::string_view name) {
  return s.Label(name);
}

// The rules of scrape_parse.h applied to the samples of a whole-body parse.
struct Expected {
  std::map<std::int64_t, std::vector<GpuPower>> by_index;
  std::set<std::string> reasons;
  bool seen = false;

  void Add(const prom::ParsedSample& s) {
    if (s.name != kPowerMetric) return;
    seen = true;
    auto non_empty = [](const std::string* l) { return l && !l->empty(); };
    if (non_empty(Label(s, "GPU_I_ID")) || non_empty(Label(s, "GPU_I_PROFILE"))) {
      reasons.emplace(reason::kMigInstanceUnsupported);
      return;
    }
    const std::string* gpu = Label(s, "gpu");
    std::int64_t index = 0;
    bool index_ok = gpu && !gpu->empty();
    if (index_ok) {
      auto [end, ec] = std::from_chars(gpu->data(), gpu->data() + gpu->size(), index);
      index_ok = ec == std::errc() && end == gpu->data() + gpu->size() && index >= 0;
    }
    if (!index_ok) {
      reasons.emplace(reason::kGpuIndexMissing);
      return;
    }
    const std::string* uuid = Label(s, "UUID");
    if (!non_empty(uuid)) {
      reasons.emplace(reason::kGpuUuidMissing);
      return;
    }
    if (!std::isfinite(s.value) || s.value < 0) {
      reasons.emplace(reason::kInvalidPowerValue);
      return;
    }
    by_index[index].push_back({index, *uuid, s.value});
  }

  std::vector<GpuPower> Rows() {
    if (!seen) reasons.emplace(reason::kPowerMetricMissing);
    std::vector<GpuPower> rows;
    for (auto& [index, list] : by_index) {
      if (list.size() > 1)
        reasons.emplace(reason::kDuplicatePowerMetric);
      else
        rows.push_back(list.front());
    }
    return rows;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body = fuzz::Text(data, size);
  ScrapeParse got = ParsePowerScrape(body);

  std::set<std::string> reasons(got.reasons.begin(), got.reasons.end());
  FUZZ_CHECK(reasons.size() == got.reasons.size());  // deduplicated
  bool parse_error = reasons.count(std::string(reason::kEndpointParseError)) > 0;
  FUZZ_CHECK(parse_error == !got.parse_error.empty());
  if (parse_error) {
    FUZZ_CHECK(got.gpus.empty());
    FUZZ_CHECK(got.reasons.size() == 1);
  }
  for (std::size_t i = 0; i < got.gpus.size(); ++i) {
    const GpuPower& g = got.gpus[i];
    FUZZ_CHECK(g.gpu_index >= 0);
    FUZZ_CHECK(i == 0 || got.gpus[i - 1].gpu_index < g.gpu_index);
    FUZZ_CHECK(!g.uuid.empty());
    FUZZ_CHECK(std::isfinite(g.power_w) && g.power_w >= 0);
  }

  Expected want;
  prom::ParseCallbacks cb;
  cb.on_sample = [&](const prom::ParsedSample& s) { want.Add(s); };
  if (!prom::ParseExposition(body, std::move(cb)).ok() || !ShapeOk(body)) return 0;
  if (parse_error)
    std::fprintf(stderr, "scrape parse error on a valid body: %s\n", got.parse_error.c_str());
  FUZZ_CHECK(!parse_error);
  std::vector<GpuPower> rows = want.Rows();
  FUZZ_CHECK(reasons == want.reasons);
  FUZZ_CHECK(rows.size() == got.gpus.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    FUZZ_CHECK(rows[i].gpu_index == got.gpus[i].gpu_index);
    FUZZ_CHECK(rows[i].uuid == got.gpus[i].uuid);
    FUZZ_CHECK(fuzz::SameDouble(rows[i].power_w, got.gpus[i].power_w));
  }
  return 0;
}
