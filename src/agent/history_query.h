// `GET /api/v1/history` (docs/agent.md, "History queries"): which fields, which time range, and
// the answer as series (JSON), rows joined on time (JSON, what `gpulse dmon --host --since` prints)
// or CSV. Pure functions of the store.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agent/history.h"
#include "agent/plan.h"
#include "core/entity.h"
#include "core/result.h"

namespace gpulse::agent {

struct HistoryRequest {
  std::vector<FieldIndex> fields;
  std::int64_t from_ms = 0;     // inclusive
  std::int64_t until_ms = 0;    // exclusive
  std::string format = "json";  // json | rows | csv
};

// A time: "now", a duration before now ("90s", "15m", "2h", "1d", "1h30m"), or unix seconds
// ("1767225600", "1767225600.25").
Result<std::int64_t> ParseTimeSpec(const std::string& text, std::int64_t now_ms);

// since "" = everything kept; until "" = now (inclusive of points stamped now).
Result<HistoryRequest> ParseHistoryRequest(const std::string& fields, const std::string& since,
                                           const std::string& until, const std::string& format,
                                           std::int64_t now_ms);

struct HistoryAnswer {
  nlohmann::json json;
  std::string text;  // csv
};

// Fails (the caller answers 413) when the answer would hold more than `max_points` points.
Result<HistoryAnswer> AnswerHistory(const HistoryRequest& req,
                                    const std::vector<std::size_t>& entities,
                                    const std::vector<Entity>& all, const HistoryStore& history,
                                    const Plan& plan, std::int64_t now_ms, std::size_t max_points);

}  // namespace gpulse::agent
