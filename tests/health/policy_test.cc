// Policies: parsing refuses what it cannot honour; each condition fires once per violation.
#include "health/policy.h"

#include <gtest/gtest.h>

namespace gpulse::health {
namespace {

using nlohmann::json;

GpuReading At(std::int64_t t_s) {
  GpuReading r;
  r.t_ms = t_s * 1000;
  return r;
}

TEST(PolicyJson, RoundTrips) {
  json j = {{"conditions", {"thermal", "xid", "dbe"}},
            {"max_temp_c", 80},
            {"action", 1},
            {"validation", 1}};
  auto p = PolicyFromJson(j);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->conditions, unsigned{kCondThermal | kCondXid | kCondDbe});
  EXPECT_EQ(p->action, PolicyAction::kGpuReset);
  auto again = PolicyFromJson(PolicyToJson(*p));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->conditions, p->conditions);
  EXPECT_EQ(*again->max_temp_c, 80);
}

TEST(PolicyJson, RefusesWhatItCannotHonour) {
  const json bad[] = {
      {{"conditions", {"thermal"}}},                        // no limit
      {{"conditions", {"xid"}}, {"max_temp_c", 80}},        // limit without condition
      {{"conditions", {"heat"}}},                           // unknown condition
      {{"conditions", {"xid", "xid"}}},                     // twice
      {{"conditions", json::array()}},                      // none
      {{"conditions", {"power"}}, {"max_power_w", -5}},     // negative
      {{"conditions", {"xid"}}, {"action", 2}},             // unknown action
      {{"conditions", {"xid"}}, {"validation", 2}},         // needs GPU kernels
      {{"conditions", {"xid"}}, {"colour", "red"}},         // unknown member
      {{"conditions", {"max_pages"}}, {"max_pages", 1.5}},  // not whole
      {{"conditions", "xid"}},                              // not an array
  };
  for (const json& j : bad) EXPECT_FALSE(PolicyFromJson(j).ok()) << j.dump();
}

TEST(PolicyWatcher, CountersFireWhenTheyGrowNotForThePast) {
  PolicySpec spec{kCondDbe | kCondPcie | kCondNvlink};
  PolicyWatcher w;
  GpuReading a = At(0);
  a.ecc_dbe_volatile = 3;  // before the policy: not reported
  a.pcie_replay = 10;
  a.nvlink_crc_flit = 0;
  EXPECT_TRUE(w.Observe(spec, a).empty());
  GpuReading b = At(1);
  b.ecc_dbe_volatile = 4;
  b.pcie_replay = 23;
  b.nvlink_crc_flit = 5;
  auto v = w.Observe(spec, b);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].condition, kCondDbe);
  EXPECT_EQ(v[0].value, 4);
  EXPECT_EQ(v[1].condition, kCondPcie);
  EXPECT_EQ(v[1].value, 13);
  EXPECT_EQ(v[2].condition, kCondNvlink);
  EXPECT_EQ(v[2].value, 5);
  EXPECT_TRUE(w.Observe(spec, b).empty());  // no growth, nothing new
}

TEST(PolicyWatcher, EachXidEventFiresOnceButNotTheBacklogOfTheFirstReading) {
  PolicySpec spec{kCondXid};
  PolicyWatcher w;
  GpuReading first = At(59);
  first.xids = {79};  // raised before the policy's first reading: not reported
  EXPECT_TRUE(w.Observe(spec, first).empty());
  GpuReading a = At(60);
  a.xids = {48, 48};
  auto v = w.Observe(spec, a);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].value, 48);
  EXPECT_EQ(v[0].message, "An XID error has violated policy manager values. XID: 48");
}

TEST(PolicyWatcher, LimitsFireOnTheCrossingAndReArmBelow) {
  PolicySpec spec{kCondThermal};
  spec.max_temp_c = 80;
  PolicyWatcher w;
  double temps[] = {70, 81, 85, 80, 82};
  std::vector<double> fired;
  for (int i = 0; i < 5; ++i) {
    GpuReading r = At(i);
    r.temperature_c = temps[i];
    for (const Violation& v : w.Observe(spec, r)) fired.push_back(v.value);
  }
  EXPECT_EQ(fired, (std::vector<double>{81, 82}));
}

TEST(PolicyWatcher, ALimitAlreadyExceededFiresAtOnce) {
  PolicySpec spec{kCondPower};
  spec.max_power_w = 600;
  PolicyWatcher w;
  GpuReading r = At(0);
  r.power_w = 650;
  auto v = w.Observe(spec, r);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].message, "The maximum power limit has violated policy manager values. Power: 650");
}

TEST(PolicyWatcher, RetiredPagesReachingTheLimit) {
  PolicySpec spec{kCondMaxPages};
  spec.max_pages = 2;
  PolicyWatcher w;
  GpuReading a = At(0), b = At(1), c = At(2);
  a.retired_sbe = 1;
  a.retired_dbe = 0;
  b.retired_sbe = 1;
  b.retired_dbe = 1;
  c = b;
  c.t_ms = 2000;
  EXPECT_TRUE(w.Observe(spec, a).empty());
  EXPECT_EQ(w.Observe(spec, b).size(), 1u);
  EXPECT_TRUE(w.Observe(spec, c).empty());  // still at the limit: reported once
}

TEST(PolicyWatcher, ConditionsNotSetAreNotReported) {
  PolicySpec spec{kCondXid};
  PolicyWatcher w;
  GpuReading a = At(0), b = At(1);
  a.ecc_dbe_volatile = 0;
  b.ecc_dbe_volatile = 1;
  b.temperature_c = 200;
  w.Observe(spec, a);
  EXPECT_TRUE(w.Observe(spec, b).empty());
}

TEST(PolicyJson, TheActionConditionTakesAListOfRecommendedActions) {
  auto p = PolicyFromJson({{"conditions", {"action"}}, {"actions", {"RESET_GPU", "RESTART_BM"}}});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->conditions, unsigned{kCondAction});
  EXPECT_EQ(p->actions, (std::vector<std::string>{"RESET_GPU", "RESTART_BM"}));
  auto again = PolicyFromJson(PolicyToJson(*p));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->actions, p->actions);
  for (const json& bad : {json{{"conditions", {"xid"}}, {"actions", {"RESET_GPU"}}},
                          json{{"conditions", {"action"}}, {"actions", {"REBOOT_PLEASE"}}},
                          json{{"conditions", {"action"}}, {"actions", {"IGNORE"}}},
                          json{{"conditions", {"action"}}, {"actions", "RESET_GPU"}}}) {
    auto r = PolicyFromJson(bad);
    EXPECT_FALSE(r.ok()) << bad.dump();
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("actions"), std::string::npos);
    }
  }
}

GpuReading WithAction(std::int64_t t_s, std::string action, std::uint64_t xid, std::int64_t at_ns) {
  GpuReading r = At(t_s);
  XidAction a;
  a.action = std::move(action);
  a.xid = xid;
  a.t_unix_ns = at_ns;
  a.description = "desc";
  r.action = a;
  return r;
}

TEST(PolicyWatcher, ANewRecommendedActionFiresOnceWithItsXidAndDescription) {
  PolicySpec spec;
  spec.conditions = kCondAction;
  PolicyWatcher w;
  EXPECT_TRUE(w.Observe(spec, WithAction(0, "NONE", 0, 0)).empty());
  auto v = w.Observe(spec, WithAction(1, "RESET_GPU", 95, 5));
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].condition, kCondAction);
  EXPECT_EQ(v[0].value, 95);
  EXPECT_EQ(v[0].action, "RESET_GPU");
  EXPECT_EQ(v[0].description, "desc");
  EXPECT_TRUE(w.Observe(spec, WithAction(2, "RESET_GPU", 95, 5)).empty()) << "the same action";
  EXPECT_EQ(w.Observe(spec, WithAction(3, "RESET_GPU", 95, 9)).size(), 1u) << "raised again";
  EXPECT_TRUE(w.Observe(spec, At(4)).empty()) << "a reading without the fault layer says nothing";
  spec.actions = {"RESTART_BM"};
  EXPECT_TRUE(w.Observe(spec, WithAction(5, "RESTART_APP", 13, 11)).empty()) << "not listed";
  EXPECT_EQ(w.Observe(spec, WithAction(6, "RESTART_BM", 79, 12)).size(), 1u);
}

TEST(PolicyWatcher, AGpuFallingOffTheBusStillFiresItsXidAndAction) {
  PolicySpec spec;
  spec.conditions = kCondXid | kCondAction;
  PolicyWatcher w;
  (void)w.Observe(spec, At(0));
  GpuReading r = WithAction(1, "RESTART_BM", 79, 7);
  r.lost = true;
  r.xids = {79};
  auto v = w.Observe(spec, r);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].condition, kCondXid);
  EXPECT_EQ(v[1].condition, kCondAction);
  EXPECT_EQ(v[1].action, "RESTART_BM");
}

TEST(PolicyWatcher, AnXidViolationCarriesTheCataloguesActionAndDescription) {
  PolicySpec spec;
  spec.conditions = kCondXid;
  PolicyWatcher w;
  (void)w.Observe(spec, At(0));
  GpuReading r = At(1);
  r.xids = {79};
  auto v = w.Observe(spec, r);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].action, "RESTART_BM");
  EXPECT_EQ(v[0].description, "GPU has fallen off the bus");
}

}  // namespace
}  // namespace gpulse::health
