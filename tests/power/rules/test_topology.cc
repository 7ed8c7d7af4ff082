// Device identity and topology rules (upstream "Topology", "Device validation") and the canary
// assertions --expect-role / --require-distinct-het-groups (upstream validator "Topology").
#include <gtest/gtest.h>

#include "power/readers/contract.h"
#include "power/rules/topology.h"

namespace gpulse::power {
namespace {

Json Dev(const std::string& host, int gpu, const std::string& role, Json het = 0) {
  return {
      {"hostname", host},
      {"gpu_index", gpu},
      {"assignments",
       {{{"worker_role", role}, {"worker_index", 0}, {"worker_process", 0}, {"het_group", het}}}}};
}

Topology Parse(Json devices) {
  Json m = {{"expected_devices", devices},
            {"expected_windows", {{{"benchmark_type", "sa-bench"}, {"concurrency", 4}}}}};
  auto t = ParseTopology(m);
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? *t : Topology{};
}

DeviceSamples Obs(const std::string& host, int gpu, std::vector<std::string> uuids) {
  DeviceSamples d;
  d.key = {host, gpu};
  d.uuids = std::move(uuids);
  d.rows = 1;
  return d;
}

bool Has(const DeviceCheck& c, std::string_view r) {
  return std::find(c.reasons.begin(), c.reasons.end(), r) != c.reasons.end();
}

Topology OneP1D() {
  Json devs = Json::array();
  for (int g = 0; g < 4; ++g) devs.push_back(Dev("a", g, "prefill", 0));
  for (int g = 0; g < 4; ++g) devs.push_back(Dev("b", g, "decode", 1));
  return Parse(devs);
}

TEST(Topology, Agg) {
  Topology t = Parse({Dev("a", 0, "agg"), Dev("a", 1, "agg")});
  EXPECT_EQ(RoleCounts(t), (std::map<std::string, int64_t>{{"agg", 2}}));
  EXPECT_FALSE(RolesConflict(t));
}

TEST(Topology, Disagg1P1D) {
  EXPECT_EQ(RoleCounts(OneP1D()), (std::map<std::string, int64_t>{{"decode", 4}, {"prefill", 4}}));
}

TEST(Topology, RepeatedSameRoleIsOk) {
  Json d = Dev("a", 0, "prefill");
  d["assignments"].push_back(
      {{"worker_role", "prefill"}, {"worker_index", 1}, {"worker_process", 0}, {"het_group", 0}});
  Topology t = Parse({d});
  EXPECT_FALSE(RolesConflict(t));
  EXPECT_TRUE(CheckDevices(t, {Obs("a", 0, {"U0"})}).valid());
}

TEST(Topology, EmptyAssignmentsAreAParseError) {
  Json d = Dev("a", 0, "prefill");
  d["assignments"] = Json::array();
  auto t = ParseTopology({{"expected_devices", {d}}});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("expected_devices[0].assignments"), std::string::npos);
}

TEST(DeviceValidation, Match) {
  Topology t = Parse({Dev("a", 0, "agg"), Dev("a", 1, "agg")});
  EXPECT_TRUE(CheckDevices(t, {Obs("a", 0, {"U0"}), Obs("a", 1, {"U1"})}).valid());
}

TEST(DeviceValidation, ExpectedDeviceMissing) {
  Topology t = Parse({Dev("a", 0, "agg"), Dev("a", 1, "agg")});
  EXPECT_TRUE(Has(CheckDevices(t, {Obs("a", 0, {"U0"})}), reason::kExpectedDeviceMissing));
}

TEST(DeviceValidation, UnexpectedDevice) {
  Topology t = Parse({Dev("a", 0, "agg")});
  EXPECT_TRUE(
      Has(CheckDevices(t, {Obs("a", 0, {"U0"}), Obs("z", 0, {"U9"})}), reason::kUnexpectedDevice));
}

TEST(DeviceValidation, EmptyExpectedSet) {
  EXPECT_TRUE(Has(CheckDevices(Topology{}, {Obs("a", 0, {"U0"})}), reason::kExpectedDeviceMissing));
}

TEST(DeviceValidation, ChangedUuid) {
  Topology t = Parse({Dev("a", 0, "agg")});
  EXPECT_TRUE(Has(CheckDevices(t, {Obs("a", 0, {"U0", "U1"})}), reason::kGpuUuidChanged));
}

TEST(DeviceValidation, OneUuidUnderTwoKeys) {
  Topology t = Parse({Dev("a", 0, "agg"), Dev("a", 1, "agg")});
  EXPECT_TRUE(
      Has(CheckDevices(t, {Obs("a", 0, {"U0"}), Obs("a", 1, {"U0"})}), reason::kGpuUuidChanged));
}

TEST(DeviceValidation, ConflictingRole) {
  Json d = Dev("a", 0, "prefill");
  d["assignments"].push_back(
      {{"worker_role", "decode"}, {"worker_index", 0}, {"worker_process", 0}, {"het_group", 0}});
  Topology t = Parse({d});
  EXPECT_TRUE(Has(CheckDevices(t, {Obs("a", 0, {"U0"})}), reason::kConflictingWorkerRoles));
}

TEST(DeviceValidation, ConflictingHetGroupsOnOneNode) {
  Topology t = Parse({Dev("a", 0, "prefill", 0), Dev("a", 1, "prefill", 1)});
  EXPECT_TRUE(Has(CheckDevices(t, {Obs("a", 0, {"U0"}), Obs("a", 1, {"U1"})}),
                  reason::kConflictingHetGroups));
}

TEST(DeviceValidation, ConflictingHetGroupsOnOneDevice) {
  Json d = Dev("a", 0, "prefill", 0);
  d["assignments"].push_back(
      {{"worker_role", "prefill"}, {"worker_index", 1}, {"worker_process", 0}, {"het_group", 1}});
  EXPECT_TRUE(Has(CheckDevices(Parse({d}), {Obs("a", 0, {"U0"})}), reason::kConflictingHetGroups));
}

// --expect-role
TEST(ExpectRole, ValidPackagePassesAllCanaryAssertions) {
  EXPECT_TRUE(CheckExpectedRoles(OneP1D(), {{"prefill", 4}, {"decode", 4}}).empty());
  EXPECT_TRUE(CheckDistinctHetGroups(OneP1D()).empty());
}

TEST(ExpectRole, ZeroCountAssertsAbsence) {
  EXPECT_TRUE(CheckExpectedRoles(OneP1D(), {{"prefill", 4}, {"decode", 4}, {"agg", 0}}).empty());
}

TEST(ExpectRole, ZeroCountRejectsAPresentRole) {
  auto f = CheckExpectedRoles(OneP1D(), {{"prefill", 4}, {"decode", 0}});
  ASSERT_FALSE(f.empty());
  EXPECT_NE(std::find(f.begin(), f.end(), "expected 0 decode GPUs, found 4"), f.end());
}

TEST(ExpectRole, UnknownRoleIsRejected) {
  auto f = CheckExpectedRoles(OneP1D(), {{"bogus", 0}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0],
            "unknown expected roles: ['bogus']; allowed roles are ['prefill', 'decode', 'agg']");
}

TEST(ExpectRole, NegativeCountIsRejected) {
  auto f = CheckExpectedRoles(OneP1D(), {{"prefill", -1}});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "expected role counts must be non-negative integers: ['prefill']");
}

TEST(ExpectRole, RoleSetMustMatchExactlyExtraRole) {
  Topology t = Parse({Dev("a", 0, "prefill", 0), Dev("b", 0, "decode", 1), Dev("c", 0, "agg", 2)});
  auto f = CheckExpectedRoles(t, {{"prefill", 1}, {"decode", 1}});
  EXPECT_FALSE(f.empty());
  EXPECT_NE(
      std::find(
          f.begin(), f.end(),
          "expected exactly the roles ['decode', 'prefill'], found ['agg', 'decode', 'prefill']"),
      f.end());
}

TEST(ExpectRole, WrongCount) {
  auto f = CheckExpectedRoles(OneP1D(), {{"prefill", 2}, {"decode", 4}});
  EXPECT_NE(std::find(f.begin(), f.end(), "expected 2 prefill GPUs, found 4"), f.end());
}

TEST(ExpectRole, RoleConflictMarksBothAssertionsNotEvaluated) {
  Json d = Dev("a", 0, "prefill");
  d["assignments"].push_back(
      {{"worker_role", "decode"}, {"worker_index", 0}, {"worker_process", 0}, {"het_group", 0}});
  Topology t = Parse({d});
  auto roles = CheckExpectedRoles(t, {{"prefill", 1}});
  EXPECT_EQ(roles, (std::vector<std::string>{
                       "conflicting_worker_roles (topology)",
                       "role count assertions not evaluated because worker roles conflict"}));
  EXPECT_EQ(CheckDistinctHetGroups(t),
            std::vector<std::string>{
                "distinct het-group assertion not evaluated because worker roles conflict"});
}

TEST(HetGroups, SharedHetGroupFailsDistinctRequirement) {
  Topology t = Parse({Dev("a", 0, "prefill", 0), Dev("b", 0, "decode", 0)});
  auto f = CheckDistinctHetGroups(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "roles share a het group: {0: ['decode', 'prefill']}");
}

TEST(HetGroups, RoleSpanningTwoHetGroupsIsRejected) {
  Topology t =
      Parse({Dev("a", 0, "prefill", 0), Dev("b", 0, "prefill", 1), Dev("c", 0, "decode", 2)});
  auto f = CheckDistinctHetGroups(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "role prefill spans het groups [0, 1], expected exactly one");
}

TEST(HetGroups, NullHetGroupIsNotDistinct) {
  Topology t = Parse({Dev("a", 0, "prefill", nullptr), Dev("b", 0, "decode", 1)});
  auto f = CheckDistinctHetGroups(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], "role prefill has het group None, expected a non-negative integer");
}

}  // namespace
}  // namespace gpulse::power
