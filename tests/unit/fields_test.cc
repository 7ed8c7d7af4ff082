#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/fields.h"

namespace gpulse {
namespace {

TEST(Fields, IdsAndNamesAreUniqueAndOrdered) {
  std::set<std::string_view> names;
  FieldId last = 0;
  for (const FieldSpec& f : AllFields()) {
    EXPECT_GT(f.id, last) << f.name;
    last = f.id;
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(names.insert(f.short_name).second) << f.short_name;
    if (!f.alias.empty()) {
      EXPECT_TRUE(names.insert(f.alias).second) << f.alias;
    }
    EXPECT_TRUE(f.name.starts_with("DCGM_FI_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

TEST(Fields, CatalogueHasTheDcgmIdsUsersRelyOn) {
  EXPECT_EQ(FieldAt(*FindField("DCGM_FI_DEV_POWER_USAGE")).id, 155);
  EXPECT_EQ(FieldAt(*FindField("155")).name, "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(FieldAt(*FindField("150")).name, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(FieldAt(*FindField("203")).name, "DCGM_FI_DEV_GPU_UTIL");
  EXPECT_EQ(FieldAt(*FindField("156")).prom_type, PromType::kCounter);
  EXPECT_EQ(FieldAt(*FindField("252")).unit, Unit::kMiB);
}

// Fields 110-115, 160-163 and 235-238 as dcgm_fields.h (DCGM 4.6) defines them: id, name, 4.6
// alias, dcgmi dmon tag, unit, type, and the NVML call each is read with.
TEST(Fields, ClockPowerLimitAndPcieLinkRowsAreDcgms) {
  struct Row {
    FieldId id;
    std::string_view name, alias, short_name;
    Unit unit;
    ValueType type;
    NvmlSource nvml;
  };
  using enum NvmlSource;
  const Row rows[] = {
      {110, "DCGM_FI_DEV_APP_SM_CLOCK", "", "SACLK", Unit::kMHz, ValueType::kInt64, kAppSmClock},
      {111, "DCGM_FI_DEV_APP_MEM_CLOCK", "", "MACLK", Unit::kMHz, ValueType::kInt64, kAppMemClock},
      {113, "DCGM_FI_DEV_MAX_SM_CLOCK", "", "SMMAX", Unit::kMHz, ValueType::kInt64, kMaxSmClock},
      {114, "DCGM_FI_DEV_MAX_MEM_CLOCK", "", "MMMAX", Unit::kMHz, ValueType::kInt64, kMaxMemClock},
      {115, "DCGM_FI_DEV_MAX_VIDEO_CLOCK", "", "VIMAX", Unit::kMHz, ValueType::kInt64,
       kMaxVideoClock},
      {160, "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS",
       "PMLMT", Unit::kWatts, ValueType::kDouble, kPowerMgmtLimit},
      {161, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS", "PMMIN",
       Unit::kWatts, ValueType::kDouble, kPowerMgmtLimitMin},
      {162, "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS", "PMMAX",
       Unit::kWatts, ValueType::kDouble, kPowerMgmtLimitMax},
      {163, "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS",
       "PMDEF", Unit::kWatts, ValueType::kDouble, kPowerMgmtLimitDefault},
      {235, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "", "PCIMG", Unit::kNone, ValueType::kInt64,
       kPcieMaxLinkGen},
      {236, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "", "PCIMW", Unit::kNone, ValueType::kInt64,
       kPcieMaxLinkWidth},
      {237, "DCGM_FI_DEV_PCIE_LINK_GEN", "", "PCILG", Unit::kNone, ValueType::kInt64,
       kPcieLinkGen},
      {238, "DCGM_FI_DEV_PCIE_LINK_WIDTH", "", "PCILW", Unit::kNone, ValueType::kInt64,
       kPcieLinkWidth},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.id);
    auto index = FindField(std::to_string(r.id));
    ASSERT_TRUE(index);
    const FieldSpec& f = FieldAt(*index);
    EXPECT_EQ(f.name, r.name);
    EXPECT_EQ(f.alias, r.alias);
    EXPECT_EQ(f.short_name, r.short_name);
    EXPECT_EQ(f.unit, r.unit);
    EXPECT_EQ(f.value_type, r.type);
    EXPECT_EQ(f.prom_type, PromType::kGauge);
    EXPECT_EQ(f.nvml, r.nvml);
    EXPECT_FALSE(PerInstance(f)) << "a GPU-level reading";
    EXPECT_FALSE(FromTwoReads(f));
    EXPECT_EQ(FindField(r.name), index);
    EXPECT_EQ(FindField(r.short_name), index);
    if (!r.alias.empty()) {
      EXPECT_EQ(FindField(r.alias), index);
    }
    EXPECT_EQ(FindUnreadableField(r.name), nullptr);
  }
  // NVML only: the sysfs backends read none of them.
  for (FieldId id : {110, 111, 113, 114, 115, 160, 161, 162, 163, 235, 236, 237, 238}) {
    EXPECT_EQ(FieldAt(*FindField(std::to_string(id))).amdgpu, SysfsSource::kNotRead) << id;
    EXPECT_EQ(FieldAt(*FindField(std::to_string(id))).intel, SysfsSource::kNotRead) << id;
  }
}

TEST(Fields, FindAcceptsIdNameAliasShortNameAnyCase) {
  auto power = FindField("155");
  ASSERT_TRUE(power);
  EXPECT_EQ(FindField("DCGM_FI_DEV_POWER_USAGE"), power);
  EXPECT_EQ(FindField("dcgm_fi_dev_power_usage"), power);
  EXPECT_EQ(FindField("DCGM_FI_DEV_BOARD_POWER_WATTS"), power);
  EXPECT_EQ(FindField("POWER"), power);
  EXPECT_EQ(FindField(" 155 "), power);
  EXPECT_FALSE(FindField("9999"));
  EXPECT_FALSE(FindField("DCGM_FI_DEV_NOPE"));
  EXPECT_FALSE(FindField(""));
}

TEST(Fields, ParseListKeepsOrder) {
  auto list = ParseFieldList("155,DCGM_FI_DEV_GPU_TEMP, GPUTL");
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ(FieldAt((*list)[0]).id, 155);
  EXPECT_EQ(FieldAt((*list)[1]).id, 150);
  EXPECT_EQ(FieldAt((*list)[2]).id, 203);
}

TEST(Fields, ParseListRejectsUnknownNamingIt) {
  auto list = ParseFieldList("155,DCGM_FI_DEV_BOGUS");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(list.error().message.find("DCGM_FI_DEV_BOGUS"), std::string::npos);
}

TEST(Fields, ParseListRejectsDuplicatesAndEmptyEntries) {
  EXPECT_FALSE(ParseFieldList("155,POWER").ok());
  EXPECT_FALSE(ParseFieldList("155,,150").ok());
  EXPECT_FALSE(ParseFieldList("").ok());
}

}  // namespace
}  // namespace gpulse

namespace gpulse {
namespace {

TEST(Fields, LabelFieldsAndUnreadableFieldsAreDistinctFromReadableOnes) {
  for (const LabelFieldSpec& l : AllLabelFields()) {
    EXPECT_FALSE(FindField(l.name)) << l.name;
    EXPECT_EQ(FindLabelField(l.name), &l);
  }
  EXPECT_EQ(FindLabelField("DCGM_FI_SYSTEM_DRIVER_VERSION")->id, 1);
  for (const UnreadableFieldSpec& u : UnreadableFields()) {
    EXPECT_FALSE(FindField(u.name)) << u.name << " is readable: remove it from the unreadable table";
    EXPECT_EQ(FindLabelField(u.name), nullptr) << u.name;
    EXPECT_FALSE(u.reason.empty()) << u.name;
  }
  EXPECT_NE(FindUnreadableField("DCGM_FI_PROF_NVOFA1_ACTIVE"), nullptr);  // no GPM metric for it
  EXPECT_EQ(FindUnreadableField("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), nullptr);  // read through GPM
}

TEST(Fields, EverySelfMetricHasOneRowWithAConventionalName) {
  std::set<std::string_view> names;
  for (const SelfMetricSpec& m : AllSelfMetrics()) {
    EXPECT_EQ(&SelfMetricAt(m.id), &m) << m.name;
    EXPECT_TRUE(m.name.starts_with("gpulse_") || m.name.starts_with("process_")) << m.name;
    EXPECT_TRUE(names.insert(m.name).second) << m.name;
    EXPECT_EQ(m.name.ends_with("_total"), m.prom_type == PromType::kCounter) << m.name;
    if (!m.unit.empty()) {  // the unit comes before a counter's _total (Prometheus's convention)
      std::string_view base = m.name;
      if (base.ends_with("_total")) base.remove_suffix(6);
      EXPECT_TRUE(base.ends_with("_" + std::string(m.unit))) << m.name;
    }
    EXPECT_FALSE(m.help.empty()) << m.name;
  }
  EXPECT_EQ(SelfMetricAt(SelfMetric::kXidErrorsTotal).name, "gpulse_xid_errors_total");
}

}  // namespace
}  // namespace gpulse

#include "core/xid.h"

namespace gpulse {
namespace {

TEST(Xid, DescriptionsAreNvidiasAndUnknownCodesSaySo) {
  EXPECT_EQ(XidDescription(0), "No Error");
  EXPECT_EQ(XidDescription(13), "Graphics Engine Exception");
  EXPECT_EQ(XidDescription(31), "GPU memory page fault");
  EXPECT_EQ(XidDescription(48), "Double Bit ECC Error");
  EXPECT_EQ(XidDescription(79), "GPU has fallen off the bus");
  EXPECT_EQ(XidDescription(94), "Contained ECC error");
  EXPECT_EQ(XidDescription(95), "Uncontained ECC error");
  EXPECT_EQ(XidDescription(154), "GPU Recovery Action Changed");  // the last row: the search reaches it
  EXPECT_EQ(XidDescription(155), "Unknown Error");
  EXPECT_EQ(XidDescription(~0ULL), "Unknown Error");
  for (std::uint64_t code = 0; code < 200; ++code) EXPECT_FALSE(XidDescription(code).empty()) << code;
}

}  // namespace
}  // namespace gpulse
