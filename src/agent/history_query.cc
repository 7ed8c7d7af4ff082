#include "agent/history_query.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>

namespace gpulse::agent {
namespace {

using nlohmann::json;

Result<std::int64_t> ParseDuration(const std::string& text) {
  std::int64_t total = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start || i == text.size() || i - start > 9) {
      return InvalidArgument("\"" + text + "\" is not a duration such as 90s, 15m, 2h or 1d");
    }
    std::int64_t n = std::stoll(text.substr(start, i - start));  // at most 9 digits
    std::int64_t unit = 0;
    switch (text[i]) {
      case 's':
        unit = 1'000;
        break;
      case 'm':
        unit = 60'000;
        break;
      case 'h':
        unit = 3'600'000;
        break;
      case 'd':
        unit = 86'400'000;
        break;
      default:
        return InvalidArgument("\"" + text + "\": unknown unit '" + std::string(1, text[i]) +
                               "' (use s, m, h or d)");
    }
    total += n * unit;
    if (total > 100LL * 365 * 86'400'000)
      return InvalidArgument("\"" + text + "\" is over 100 years");
    any = true;
    ++i;
  }
  if (!any) return InvalidArgument("empty duration");
  return total;
}

// `t_ms`: a row's time, whose state is the entity's then (a GPU lost later was present before).
void Entry(json& row, const Entity& e, std::optional<std::int64_t> t_ms = std::nullopt) {
  row["entity"] = EntityKey(e);
  row["gpu"] = e.gpu;
  row["uuid"] = e.uuid;
  if (e.gpu_instance_id) {
    row["gpu_instance_id"] = *e.gpu_instance_id;
    row["gpu_instance_profile"] = e.profile;
  }
  EntityState state = e.state;
  if (t_ms && state == EntityState::kLost && e.lost_unix_ns &&
      *t_ms * 1'000'000 < *e.lost_unix_ns) {
    state = EntityState::kPresent;
  }
  row["state"] = std::string(EntityStateName(state));
}

std::string CsvNumber(const std::optional<double>& v) {
  if (!v) return "";
  return json(*v).dump();  // shortest text that reads back as the same double
}

}  // namespace

Result<std::int64_t> ParseTimeSpec(const std::string& text, std::int64_t now_ms) {
  if (text == "now") return now_ms;
  if (!text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) != 0) &&
      text.find_first_not_of("0123456789.") == std::string::npos) {
    char* end = nullptr;
    double s = std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size() && s >= 0 && s < 1e11) return std::llround(s * 1000.0);
  }
  auto d = ParseDuration(text);
  if (!d) {
    return InvalidArgument("\"" + text +
                           "\" is neither \"now\", a duration before now (90s, 2h, "
                           "1d) nor unix seconds");
  }
  return now_ms - *d;
}

Result<HistoryRequest> ParseHistoryRequest(const std::string& fields, const std::string& since,
                                           const std::string& until, const std::string& format,
                                           std::int64_t now_ms) {
  HistoryRequest r;
  if (fields.empty()) return InvalidArgument("give the fields (fields=155,150 or names)");
  auto f = ParseFieldList(fields);
  if (!f) return f.error();
  r.fields = *f;
  r.from_ms = 0;
  r.until_ms = now_ms + 1;
  if (!since.empty()) {
    auto t = ParseTimeSpec(since, now_ms);
    if (!t) return InvalidArgument("since: " + t.error().message);
    r.from_ms = *t;
  }
  if (!until.empty()) {
    auto t = ParseTimeSpec(until, now_ms);
    if (!t) return InvalidArgument("until: " + t.error().message);
    r.until_ms = *t + (until == "now" ? 1 : 0);
  }
  if (r.until_ms < r.from_ms) return InvalidArgument("until is before since");
  r.format = format.empty() ? "json" : format;
  if (r.format != "json" && r.format != "rows" && r.format != "csv") {
    return InvalidArgument("format \"" + r.format + "\": use json, rows or csv");
  }
  return r;
}

Result<HistoryAnswer> AnswerHistory(const HistoryRequest& req,
                                    const std::vector<std::size_t>& entities,
                                    const std::vector<Entity>& all, const HistoryStore& history,
                                    const Plan& plan, std::int64_t now_ms, std::size_t max_points) {
  HistoryAnswer a;
  std::vector<Point> points;
  std::size_t total = 0;
  json fields = json::array();
  for (FieldIndex f : req.fields)
    fields.push_back({{"id", FieldAt(f).id}, {"name", FieldAt(f).name}});
  // (time, entity) -> values, for rows and csv.
  std::map<std::pair<std::int64_t, std::size_t>, std::vector<std::optional<double>>> joined;
  json out_entities = json::array();
  for (std::size_t pos : entities) {
    json e = json::object();
    Entry(e, all.at(pos));
    json series = json::array();
    for (std::size_t i = 0; i < req.fields.size(); ++i) {
      FieldIndex f = req.fields[i];
      SeriesKey key{pos, f};
      const Series* s = history.Find(key);
      auto watch = plan.series.find(key);
      json one{{"field_id", FieldAt(f).id},
               {"field", FieldAt(f).name},
               {"watched", watch != plan.series.end()},
               {"unsupported", history.unsupported(key)}};
      if (watch != plan.series.end()) one["update_ms"] = watch->second.update_ms;
      points.clear();
      if (s != nullptr) s->Query(req.from_ms, req.until_ms, points);
      total += points.size();
      if (total > max_points) {
        return InvalidArgument(fmt::format(
            "the answer would hold more than {} points: ask for a shorter range, fewer fields or "
            "fewer entities",
            max_points));
      }
      if (s != nullptr) {
        auto oldest = s->OldestMs();
        one["oldest_unix_ms"] = oldest ? json(*oldest) : json(nullptr);
      }
      if (req.format == "json") {
        json pts = json::array();
        for (const Point& p : points)
          pts.push_back({p.t_ms, p.value ? json(*p.value) : json(nullptr)});
        one["points"] = std::move(pts);
        series.push_back(std::move(one));
      } else {
        for (const Point& p : points) {
          auto& row = joined[{p.t_ms, pos}];
          if (row.empty()) row.assign(req.fields.size(), std::nullopt);
          row[i] = p.value;
        }
      }
    }
    if (req.format == "json") {
      e["series"] = std::move(series);
      out_entities.push_back(std::move(e));
    }
  }
  if (req.format == "json") {
    a.json = {{"now_unix_ms", now_ms},
              {"from_unix_ms", req.from_ms},
              {"until_unix_ms", req.until_ms},
              {"fields", fields},
              {"points", total},
              {"entities", std::move(out_entities)}};
    return a;
  }
  if (req.format == "rows") {
    json rows = json::array();
    for (const auto& [k, values] : joined) {
      json row{{"t_unix_ms", k.first}};
      Entry(row, all.at(k.second), k.first);
      json v = json::array();
      for (const auto& x : values) v.push_back(x ? json(*x) : json(nullptr));
      row["values"] = std::move(v);
      rows.push_back(std::move(row));
    }
    a.json = {{"now_unix_ms", now_ms},
              {"from_unix_ms", req.from_ms},
              {"until_unix_ms", req.until_ms},
              {"fields", fields},
              {"rows", std::move(rows)}};
    return a;
  }
  std::string csv = "timestamp_unix,entity,gpu,gpu_instance_id,uuid";
  for (FieldIndex f : req.fields) csv += "," + std::string(FieldAt(f).name);
  csv += "\n";
  for (const auto& [k, values] : joined) {
    const Entity& e = all.at(k.second);
    csv += fmt::format("{:.3f},{},{},{},{}", k.first / 1000.0, EntityKey(e), e.gpu,
                       e.gpu_instance_id ? std::to_string(*e.gpu_instance_id) : "", e.uuid);
    for (const auto& x : values) csv += "," + CsvNumber(x);
    csv += "\n";
  }
  a.text = std::move(csv);
  return a;
}

}  // namespace gpulse::agent
