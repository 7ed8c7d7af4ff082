// The agent's history images (src/agent/series.h, docs/agent-series-encoding.md), what the agent
// reads back from its state database at start, over hostile bytes: Series::Parse. An accepted
// image holds no more points than its bound allows, queries back in time order, and written back
// by Serialize parses to the same points.
#include <vector>

#include "agent/series.h"
#include "fuzz/fuzz_util.h"

using namespace gpulse;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto s = agent::Series::Parse(fuzz::Text(data, size));
  if (!s.ok()) {
    FUZZ_CHECK(!s.error().message.empty());
    return 0;
  }
  FUZZ_CHECK(s->size() <= s->max_points() + agent::Series::kChunkPoints);
  FUZZ_CHECK(s->bytes() <= agent::Series::WorstCaseBytes(s->max_points()));
  std::vector<agent::Point> points;
  s->Query(INT64_MIN, INT64_MAX, points);
  FUZZ_CHECK(points.size() == s->size());
  for (std::size_t i = 1; i < points.size(); ++i) FUZZ_CHECK(points[i - 1].t_ms < points[i].t_ms);
  auto again = agent::Series::Parse(s->Serialize());
  FUZZ_CHECK(again.ok());
  std::vector<agent::Point> back;
  again->Query(INT64_MIN, INT64_MAX, back);
  FUZZ_CHECK(back.size() == points.size());
  for (std::size_t i = 0; i < back.size(); ++i) {
    FUZZ_CHECK(back[i].t_ms == points[i].t_ms && fuzz::SameOpt(back[i].value, points[i].value));
  }
  return 0;
}
