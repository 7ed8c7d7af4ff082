// The watch plan (pure): merged watches, entity forms, the history bound; and the history query's
// time specs and answers.
#include "agent/plan.h"

#include <gtest/gtest.h>

#include "agent/history_query.h"

namespace gpulse::agent {
namespace {

SystemInfo TwoGpusOneMig() {
  SystemInfo info;
  DeviceInfo a;
  a.index = 0;
  a.uuid = "GPU-a";
  DeviceInfo b;
  b.index = 1;
  b.uuid = "GPU-b";
  b.mig_enabled = true;
  MigInstance mi;
  mi.gpu_instance_id = 1;
  mi.compute_instance_id = 0;
  mi.uuid = "MIG-b1";
  mi.profile = "3g.40gb";
  b.mig_instances.push_back(mi);
  info.devices = {a, b};
  return info;
}

FieldIndex F(int id) { return *IndexOf(id); }

TEST(Plan, WatchesOfOneFieldMergeToTheFastestIntervalAndTheLongestKeepAge) {
  auto entities = BuildEntities(TwoGpusOneMig());
  std::vector<WatchRow> w = {{1, kDefaultGroupId, {155}, 1000, 600, 0},
                             {2, kDefaultGroupId, {155, 150}, 250, 60, 0}};
  Plan p = BuildPlan(w, {}, entities);
  const EffectiveWatch& power = p.series.at({0, F(155)});
  EXPECT_EQ(power.update_ms, 250);
  EXPECT_EQ(power.keep_age_ms, 600'000);
  EXPECT_EQ(power.max_points, 2401u);
  EXPECT_EQ(p.series.at({0, F(150)}).keep_age_ms, 60'000);
  ASSERT_EQ(p.cadences.size(), 1u);
  EXPECT_EQ(p.cadences.at(250).size(), 2u) << "both GPUs, not the MIG instances (default group)";
}

TEST(Plan, AGpuInstanceGetsOnlyItsOwnReadings) {
  auto entities = BuildEntities(TwoGpusOneMig());
  std::size_t gi = 0;
  for (std::size_t i = 0; i < entities.size(); ++i) {
    if (entities[i].kind == EntityKind::kGpuInstance) gi = i;
  }
  ASSERT_NE(gi, 0u);
  GroupRow g{2, "mig", {EntityKey(entities[gi]), "7"}, 0};
  EXPECT_EQ(EntityKey(entities[gi]), "1:1");
  Plan p = BuildPlan({{1, 2, {252, 155}, 1000, 60, 0}}, {g}, entities);
  EXPECT_EQ(p.series.count({gi, F(252)}), 1u) << "memory is read per instance";
  EXPECT_EQ(p.series.count({gi, F(155)}), 0u) << "power is the GPU's only";
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("entity 7"), std::string::npos) << p.notes[0];
}

TEST(Plan, TheBoundIsTheSumOfTheSeriesWorstCases) {
  auto entities = BuildEntities(TwoGpusOneMig());
  Plan p = BuildPlan({{1, kDefaultGroupId, {155, 150}, 1000, 3600, 0}}, {}, entities);
  EXPECT_EQ(p.worst_case_bytes, 4 * Series::WorstCaseBytes(3601));
  EXPECT_TRUE(BuildPlan({}, {}, entities).series.empty());
}

TEST(HistoryQuery, TimeSpecs) {
  const std::int64_t now = 1'767'225'600'000;
  EXPECT_EQ(*ParseTimeSpec("now", now), now);
  EXPECT_EQ(*ParseTimeSpec("2h", now), now - 7'200'000);
  EXPECT_EQ(*ParseTimeSpec("1h30m", now), now - 5'400'000);
  EXPECT_EQ(*ParseTimeSpec("90s", now), now - 90'000);
  EXPECT_EQ(*ParseTimeSpec("1d", now), now - 86'400'000);
  EXPECT_EQ(*ParseTimeSpec("1767225600.25", now), 1'767'225'600'250);
  for (const char* bad : {"", "h", "2x", "-1h", "1e9", "2h-", "9999999999h", "now+1"}) {
    EXPECT_FALSE(ParseTimeSpec(bad, now).ok()) << bad;
  }
}

TEST(HistoryQuery, RequestChecks) {
  const std::int64_t now = 10'000'000;
  EXPECT_FALSE(ParseHistoryRequest("", "", "", "", now).ok()) << "fields are required";
  EXPECT_FALSE(ParseHistoryRequest("NOPE", "", "", "", now).ok());
  EXPECT_FALSE(ParseHistoryRequest("155", "1h", "2h", "", now).ok()) << "until before since";
  EXPECT_FALSE(ParseHistoryRequest("155", "", "", "xml", now).ok());
  auto r = ParseHistoryRequest("155,POWER", "", "", "", now);
  EXPECT_FALSE(r.ok()) << "a duplicate field";
  auto ok = ParseHistoryRequest("155,150", "1h", "", "rows", now);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->from_ms, now - 3'600'000);
  EXPECT_EQ(ok->until_ms, now + 1);
}

TEST(HistoryQuery, RowsJoinOnTimeAndAbsentStaysAbsent) {
  auto entities = BuildEntities(TwoGpusOneMig());
  Plan plan = BuildPlan({{1, kDefaultGroupId, {155, 150}, 1000, 3600, 0}}, {}, entities);
  HistoryStore h;
  for (const auto& [k, e] : plan.series) h.Ensure(k, e.max_points);
  for (std::int64_t t = 1000; t <= 5000; t += 1000) {
    h.Append({0, F(155)}, t, t == 3000 ? std::nullopt : std::optional<double>(t / 10.0));
    h.Append({0, F(150)}, t, 50);
  }
  auto req = ParseHistoryRequest("155,150", "", "", "rows", 5000);
  ASSERT_TRUE(req.ok());
  auto a = AnswerHistory(*req, {0}, entities, h, plan, 5000, 1000);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const auto& rows = a->json["rows"];
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[2]["t_unix_ms"], 3000);
  EXPECT_TRUE(rows[2]["values"][0].is_null()) << "absent, not 0";
  EXPECT_EQ(rows[2]["values"][1], 50.0);
  EXPECT_EQ(rows[4]["values"][0], 500.0);
  auto csv = ParseHistoryRequest("155,150", "", "", "csv", 5000);
  auto c = AnswerHistory(*csv, {0}, entities, h, plan, 5000, 1000);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->text.find("3.000,0,0,,GPU-a,,50.0\n"), std::string::npos) << c->text;
  auto small = AnswerHistory(*req, {0}, entities, h, plan, 5000, 9);
  EXPECT_FALSE(small.ok()) << "over max_points: the caller answers 413";
}

}  // namespace
}  // namespace gpulse::agent
