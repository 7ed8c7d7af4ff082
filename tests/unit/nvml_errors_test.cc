// Each NVML error class as the backend handles it, driven through an API of fakes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/fields.h"
#include "gpu/nvml/nvml_backend.h"
#include "gpu/nvml/nvml_errors.h"
#include "unit/fake_nvml.h"

namespace gpulse::nvml {
namespace {

using testing::FakeNvml;

FieldIndex F(FieldId id) { return *IndexOf(id); }

class NvmlErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override { fake_.devices.resize(2); }
  std::unique_ptr<NvmlBackend> Open() {
    auto b = NvmlBackend::Create(testing::MakeFakeApi(&fake_), nullptr, "fake");
    EXPECT_TRUE(b.ok());
    return std::move(b).value();
  }
  FakeNvml fake_;
  Sample s_;
};

TEST(NvmlClassify, MapsEveryClass) {
  EXPECT_EQ(Classify(NVML_SUCCESS), ErrorClass::kOk);
  EXPECT_EQ(Classify(NVML_ERROR_NOT_SUPPORTED), ErrorClass::kNotSupported);
  EXPECT_EQ(Classify(NVML_ERROR_FUNCTION_NOT_FOUND), ErrorClass::kNotSupported);
  EXPECT_EQ(Classify(NVML_ERROR_NO_PERMISSION), ErrorClass::kNoPermission);
  EXPECT_EQ(Classify(NVML_ERROR_GPU_IS_LOST), ErrorClass::kGpuLost);
  EXPECT_EQ(Classify(NVML_ERROR_TIMEOUT), ErrorClass::kTransient);
  EXPECT_EQ(Classify(NVML_ERROR_UNKNOWN), ErrorClass::kTransient);
  EXPECT_EQ(ReturnName(NVML_ERROR_GPU_IS_LOST), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(ReturnName(12345), "NVML error 12345");
}

TEST_F(NvmlErrorsTest, SuccessConvertsUnits) {
  auto b = Open();
  std::vector<FieldIndex> f = {F(155), F(156), F(203), F(204), F(150), F(252), F(253), F(157)};
  b->Read(0, f, s_);
  EXPECT_EQ(s_.state, DeviceState::kOk);
  EXPECT_DOUBLE_EQ(*s_.values[F(155)], 250.0);          // mW -> W
  EXPECT_DOUBLE_EQ(*s_.values[F(156)], 123456789.0);    // mJ stays mJ
  EXPECT_DOUBLE_EQ(*s_.values[F(203)], 90.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(204)], 40.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(252)], 10 * 1024.0);    // bytes -> MiB
  EXPECT_DOUBLE_EQ(*s_.values[F(253)], 1024.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(157)], 251.0);          // field value in mW -> W
  EXPECT_FALSE(s_.values[F(100)].has_value());          // not requested: absent
}

TEST_F(NvmlErrorsTest, NotSupportedIsAbsentAndNotRetried) {
  fake_.devices[0].rc["GetPowerUsage"] = NVML_ERROR_NOT_SUPPORTED;
  auto b = Open();
  std::vector<FieldIndex> f = {F(155), F(203)};
  for (int tick = 0; tick < 5; ++tick) {
    b->Read(0, f, s_);
    EXPECT_FALSE(s_.values[F(155)].has_value());
    EXPECT_TRUE(s_.values[F(203)].has_value());
  }
  EXPECT_EQ(fake_.devices[0].calls["GetPowerUsage"], 1);
  EXPECT_EQ(fake_.devices[0].calls["GetUtilizationRates"], 5);
  EXPECT_EQ(b->stats().unsupported_calls, 1u);
}

TEST_F(NvmlErrorsTest, TransientFailureIsAbsentThisTickOnly) {
  fake_.devices[0].rc["GetTemperature"] = NVML_ERROR_TIMEOUT;
  auto b = Open();
  std::vector<FieldIndex> f = {F(150)};
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(150)].has_value());
  fake_.devices[0].rc.erase("GetTemperature");
  b->Read(0, f, s_);
  EXPECT_DOUBLE_EQ(*s_.values[F(150)], 65.0);
  EXPECT_EQ(b->stats().failed_calls, 1u);
}

TEST_F(NvmlErrorsTest, GpuLostMarksOnlyThatDevice) {
  auto b = Open();
  fake_.devices[1].rc["GetPowerUsage"] = NVML_ERROR_GPU_IS_LOST;
  std::vector<FieldIndex> f = {F(203), F(155)};
  b->Read(1, f, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  for (const auto& v : s_.values) EXPECT_FALSE(v.has_value());  // nothing half-read survives
  int calls = fake_.devices[1].calls["GetUtilizationRates"];
  b->Read(1, f, s_);
  EXPECT_EQ(s_.state, DeviceState::kLost);
  EXPECT_EQ(fake_.devices[1].calls["GetUtilizationRates"], calls);  // a lost GPU is not polled
  b->Read(0, f, s_);
  EXPECT_EQ(s_.state, DeviceState::kOk);
  EXPECT_TRUE(s_.values[F(155)].has_value());
}

TEST_F(NvmlErrorsTest, NoPermissionOnIndexSkipsDeviceWithReason) {
  fake_.devices[1].handle_rc = NVML_ERROR_NO_PERMISSION;
  auto b = Open();
  ASSERT_EQ(b->info().devices.size(), 1u);
  ASSERT_EQ(b->info().skipped.size(), 1u);
  EXPECT_EQ(b->info().skipped[0].index, 1u);
  EXPECT_NE(b->info().skipped[0].reason.find("no permission"), std::string::npos);
  EXPECT_NE(b->info().skipped[0].reason.find("NVML_ERROR_NO_PERMISSION"), std::string::npos);
}

TEST_F(NvmlErrorsTest, LostAtOpenIsSkippedWithReason) {
  fake_.devices[0].handle_rc = NVML_ERROR_GPU_IS_LOST;
  auto b = Open();
  ASSERT_EQ(b->info().devices.size(), 1u);
  EXPECT_EQ(b->info().devices[0].index, 1u);
  EXPECT_NE(b->info().skipped[0].reason.find("GPU is lost"), std::string::npos);
}

TEST_F(NvmlErrorsTest, NoPermissionOnAFieldIsAbsentForThatField) {
  fake_.devices[0].rc["GetTotalEnergyConsumption"] = NVML_ERROR_NO_PERMISSION;
  auto b = Open();
  std::vector<FieldIndex> f = {F(156), F(155)};
  b->Read(0, f, s_);
  EXPECT_EQ(s_.state, DeviceState::kOk);
  EXPECT_FALSE(s_.values[F(156)].has_value());
  EXPECT_TRUE(s_.values[F(155)].has_value());
}

TEST_F(NvmlErrorsTest, PstateUnknownSentinelIsAbsent) {
  fake_.devices[0].pstate = NVML_PSTATE_UNKNOWN;
  auto b = Open();
  std::vector<FieldIndex> f = {F(190)};
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(190)].has_value());
}

TEST_F(NvmlErrorsTest, MemoryFallsBackToV1WhenV2VersionRejected) {
  fake_.devices[0].memory_v2 = false;
  auto b = Open();
  fake_.devices[0].calls.clear();  // count only the calls made while sampling
  std::vector<FieldIndex> f = {F(252), F(253), F(250)};
  b->Read(0, f, s_);
  EXPECT_DOUBLE_EQ(*s_.values[F(252)], 11 * 1024.0);
  EXPECT_FALSE(s_.values[F(253)].has_value());  // v1 has no reserved figure
  b->Read(0, f, s_);
  EXPECT_EQ(fake_.devices[0].calls["GetMemoryInfo_v2"], 1);  // rejected once, not retried
  EXPECT_EQ(fake_.devices[0].calls["GetMemoryInfo"], 2);
}

TEST_F(NvmlErrorsTest, FieldValueEntryNotSupportedLeavesOthers) {
  fake_.devices[0].rc["field82"] = NVML_ERROR_NOT_SUPPORTED;
  auto b = Open();
  std::vector<FieldIndex> f = {F(140), F(157)};
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(140)].has_value());
  EXPECT_DOUBLE_EQ(*s_.values[F(157)], 251.0);
}

TEST_F(NvmlErrorsTest, XidIsAbsentUntilOneArrivesThenRoutedToItsDevice) {
  auto b = Open();
  std::vector<FieldIndex> f = {F(230)};
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(230)].has_value());  // no XID yet is not "XID 0"
  fake_.devices[1].xid_pending = 79;
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(230)].has_value());
  b->Read(1, f, s_);
  EXPECT_DOUBLE_EQ(*s_.values[F(230)], 79.0);
  EXPECT_EQ(s_.xid_events, std::vector<std::uint64_t>{79});  // the event, once
  b->Read(1, f, s_);
  EXPECT_DOUBLE_EQ(*s_.values[F(230)], 79.0);  // the last XID stays...
  EXPECT_TRUE(s_.xid_events.empty());          // ...but is not reported as a new event
}

TEST_F(NvmlErrorsTest, XidAbsentWhenEventsCannotBeRegistered) {
  fake_.devices[0].rc["RegisterEvents"] = NVML_ERROR_NOT_SUPPORTED;
  fake_.devices[0].xid_pending = 13;
  auto b = Open();
  std::vector<FieldIndex> f = {F(230)};
  b->Read(0, f, s_);
  EXPECT_FALSE(s_.values[F(230)].has_value());
}

// ---------------------------------------------------------------------------------------------
// Fields 110-115, 160-163 and 235-238: the application and maximum clocks, the power management
// limit with its range and default, and the PCIe link. MakeFakeApi has none of their calls (a
// driver without them); WithClockLimitAndLinkCalls adds fakes that count their calls and answer
// the per-call code in g_limit_rc.

std::map<std::string, int> g_limit_calls;
std::map<std::string, nvmlReturn_t> g_limit_rc;

nvmlReturn_t LimitCall(const char* name) {
  ++g_limit_calls[name];
  auto it = g_limit_rc.find(name);
  return it == g_limit_rc.end() ? NVML_SUCCESS : it->second;
}

// Distinct values per clock type, so that a read of the wrong type shows.
unsigned ClockFor(int type, unsigned graphics, unsigned sm, unsigned mem, unsigned video) {
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
      return graphics;
    case NVML_CLOCK_SM:
      return sm;
    case NVML_CLOCK_MEM:
      return mem;
    default:
      return video;
  }
}

NvmlApi WithClockLimitAndLinkCalls(NvmlApi a) {
  a.DeviceGetApplicationsClock = [](nvmlDevice_t, int type, unsigned* mhz) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetApplicationsClock");
    if (rc == NVML_SUCCESS) *mhz = ClockFor(type, 1755, 1754, 2619, 1500);
    return rc;
  };
  a.DeviceGetMaxClockInfo = [](nvmlDevice_t, int type, unsigned* mhz) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetMaxClockInfo");
    if (rc == NVML_SUCCESS) *mhz = ClockFor(type, 1981, 1980, 2619, 1755);
    return rc;
  };
  a.DeviceGetPowerManagementLimit = [](nvmlDevice_t, unsigned* mw) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetPowerManagementLimit");
    if (rc == NVML_SUCCESS) *mw = 287500;
    return rc;
  };
  a.DeviceGetPowerManagementLimitConstraints = [](nvmlDevice_t, unsigned* min_mw,
                                                  unsigned* max_mw) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetPowerManagementLimitConstraints");
    if (rc == NVML_SUCCESS) {
      *min_mw = 200000;
      *max_mw = 700000;
    }
    return rc;
  };
  a.DeviceGetPowerManagementDefaultLimit = [](nvmlDevice_t, unsigned* mw) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetPowerManagementDefaultLimit");
    if (rc == NVML_SUCCESS) *mw = 699999;
    return rc;
  };
  a.DeviceGetMaxPcieLinkGeneration = [](nvmlDevice_t, unsigned* gen) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetMaxPcieLinkGeneration");
    if (rc == NVML_SUCCESS) *gen = 5;
    return rc;
  };
  a.DeviceGetMaxPcieLinkWidth = [](nvmlDevice_t, unsigned* width) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetMaxPcieLinkWidth");
    if (rc == NVML_SUCCESS) *width = 16;
    return rc;
  };
  a.DeviceGetCurrPcieLinkGeneration = [](nvmlDevice_t, unsigned* gen) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetCurrPcieLinkGeneration");
    if (rc == NVML_SUCCESS) *gen = 4;
    return rc;
  };
  a.DeviceGetCurrPcieLinkWidth = [](nvmlDevice_t, unsigned* width) -> nvmlReturn_t {
    nvmlReturn_t rc = LimitCall("GetCurrPcieLinkWidth");
    if (rc == NVML_SUCCESS) *width = 8;
    return rc;
  };
  return a;
}

constexpr FieldId kClockLimitAndLinkIds[] = {110, 111, 113, 114, 115, 160, 161,
                                             162, 163, 235, 236, 237, 238};

std::vector<FieldIndex> ClockLimitAndLinkFields() {
  std::vector<FieldIndex> f;
  for (FieldId id : kClockLimitAndLinkIds) f.push_back(F(id));
  return f;
}

class NvmlClockLimitAndLinkTest : public NvmlErrorsTest {
 protected:
  void SetUp() override {
    NvmlErrorsTest::SetUp();
    g_limit_calls.clear();
    g_limit_rc.clear();
  }
  std::unique_ptr<NvmlBackend> OpenWithCalls() {
    auto b = NvmlBackend::Create(WithClockLimitAndLinkCalls(testing::MakeFakeApi(&fake_)), nullptr,
                                 "fake");
    EXPECT_TRUE(b.ok());
    g_limit_calls.clear();  // count only the calls made while sampling (open reads the max clock)
    return std::move(b).value();
  }
};

TEST_F(NvmlClockLimitAndLinkTest, ReadInDcgmUnitsFromTheRightClockTypes) {
  auto b = OpenWithCalls();
  b->Read(0, ClockLimitAndLinkFields(), s_);
  ASSERT_EQ(s_.state, DeviceState::kOk);
  EXPECT_DOUBLE_EQ(*s_.values[F(110)], 1755.0) << "NVML_CLOCK_GRAPHICS, as DCGM reads it";
  EXPECT_DOUBLE_EQ(*s_.values[F(111)], 2619.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(113)], 1980.0) << "NVML_CLOCK_SM";
  EXPECT_DOUBLE_EQ(*s_.values[F(114)], 2619.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(115)], 1755.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(160)], 287.5);  // mW -> W
  EXPECT_DOUBLE_EQ(*s_.values[F(161)], 200.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(162)], 700.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(163)], 699.999);
  EXPECT_DOUBLE_EQ(*s_.values[F(235)], 5.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(236)], 16.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(237)], 4.0);
  EXPECT_DOUBLE_EQ(*s_.values[F(238)], 8.0);
  // One call per reading, and one nvmlDeviceGetPowerManagementLimitConstraints for min and max.
  EXPECT_EQ(g_limit_calls["GetApplicationsClock"], 2);
  EXPECT_EQ(g_limit_calls["GetMaxClockInfo"], 3);
  EXPECT_EQ(g_limit_calls["GetPowerManagementLimitConstraints"], 1);
  EXPECT_EQ(g_limit_calls["GetPowerManagementLimit"], 1);
  EXPECT_EQ(g_limit_calls["GetPowerManagementDefaultLimit"], 1);
  for (const char* link : {"GetMaxPcieLinkGeneration", "GetMaxPcieLinkWidth",
                           "GetCurrPcieLinkGeneration", "GetCurrPcieLinkWidth"}) {
    EXPECT_EQ(g_limit_calls[link], 1) << link;
  }
  const std::vector<FieldIndex> only_max = {F(162)};
  b->Read(0, only_max, s_);
  EXPECT_DOUBLE_EQ(*s_.values[F(162)], 700.0);
  EXPECT_FALSE(s_.values[F(161)].has_value()) << "not requested: absent";
}

TEST_F(NvmlClockLimitAndLinkTest, ADriverWithoutTheCallsLeavesThemAbsentNeverZero) {
  auto b = Open();  // MakeFakeApi alone: none of the calls
  const std::vector<FieldIndex> f = ClockLimitAndLinkFields();
  b->Read(0, f, s_);
  ASSERT_EQ(s_.state, DeviceState::kOk);
  for (FieldIndex i : f) {
    EXPECT_FALSE(s_.values[i].has_value()) << FieldAt(i).name;
    EXPECT_TRUE(s_.unsupported[i]) << FieldAt(i).name;
  }
}

TEST_F(NvmlClockLimitAndLinkTest, NotSupportedIsAbsentAndNotRetriedPerCall) {
  g_limit_rc["GetPowerManagementLimitConstraints"] = NVML_ERROR_NOT_SUPPORTED;
  g_limit_rc["GetCurrPcieLinkWidth"] = NVML_ERROR_NO_PERMISSION;
  g_limit_rc["GetApplicationsClock"] = NVML_ERROR_TIMEOUT;
  auto b = OpenWithCalls();
  const std::vector<FieldIndex> f = ClockLimitAndLinkFields();
  for (int tick = 0; tick < 3; ++tick) {
    b->Read(0, f, s_);
    EXPECT_FALSE(s_.values[F(161)].has_value());
    EXPECT_FALSE(s_.values[F(162)].has_value());
    EXPECT_TRUE(s_.unsupported[F(161)] && s_.unsupported[F(162)]);
    EXPECT_FALSE(s_.values[F(238)].has_value());
    EXPECT_TRUE(s_.unsupported[F(238)]);
    EXPECT_FALSE(s_.values[F(110)].has_value()) << "a transient failure: absent this tick";
    EXPECT_FALSE(s_.unsupported[F(110)]);
    EXPECT_DOUBLE_EQ(*s_.values[F(160)], 287.5) << "the other power calls still answer";
    EXPECT_DOUBLE_EQ(*s_.values[F(237)], 4.0) << "the other link calls still answer";
  }
  EXPECT_EQ(g_limit_calls["GetPowerManagementLimitConstraints"], 1);
  EXPECT_EQ(g_limit_calls["GetCurrPcieLinkWidth"], 1);
  EXPECT_EQ(g_limit_calls["GetApplicationsClock"], 6) << "transient failures are retried";
}

}  // namespace
}  // namespace gpulse::nvml
