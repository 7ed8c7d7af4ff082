// The NVML backend's settings (ReadSettings, the setters, ResetGpu) and the InfoROM field 84:
// through the NVML simulator loaded as --simulate loads it (the real dlopen path), and through an
// API of fakes for what the simulator cannot show (missing symbols, a real GPU, every error code).
// No test here touches a real GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/fields.h"
#include "gpu/nvml/nvml_backend.h"
#include "unit/fake_nvml.h"
#include "unit/scenario_backend.h"

namespace gpulse::nvml {
namespace {

using testing::FakeNvml;

// GPU 0: every setting readable and changeable, InfoROM corrupt from 2 s until 4 s; GPU 1: no ECC,
// no permission to change settings, no compute mode or InfoROM check; GPU 2: lost at 5 s.
constexpr const char* kScenario = R"(name: settings
device_defaults: {wobble: false}
devices:
  - {name: "NVIDIA H100 80GB HBM3", memory_total_mib: 81559, power_limit_w: 700,
     max_sm_clock_mhz: 1980, idle_sm_clock_mhz: 345, max_mem_clock_mhz: 2619}
  - {name: "NVIDIA A40", memory_total_mib: 46068, power_limit_w: 300, ecc: false,
     settings_permission: false, unsupported: [inforom, compute_mode]}
  - {name: "NVIDIA A100-SXM4-40GB", memory_total_mib: 40960, power_limit_w: 400}
faults:
  - {at: 2, until: 4, device: 0, kind: inforom_corrupt}
  - {at: 5, device: 2, kind: gpu_lost}
)";

FieldIndex F(FieldId id) { return *IndexOf(id); }

class NvmlSettingsSimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scenario_ = std::make_unique<testing::ScenarioDir>(
        "gpulse-settings", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
        kScenario);
    auto opened = scenario_->Open();
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    backend_ = std::move(opened).value();
    ASSERT_TRUE(backend_->info().simulated);
    ASSERT_TRUE(backend_->SetSimulatedClock(0));
  }
  void TearDown() override { backend_.reset(); }
  // Field 84 of GPU `pos` at simulated time `t`.
  Sample ReadInforom(std::size_t pos, double t) {
    EXPECT_TRUE(backend_->SetSimulatedClock(t));
    const FieldIndex fields[] = {F(84)};
    Sample s;
    backend_->Read(pos, fields, s);
    return s;
  }

  std::unique_ptr<testing::ScenarioDir> scenario_;  // outlives backend_
  std::unique_ptr<gpu::Backend> backend_;
};

TEST_F(NvmlSettingsSimTest, ReadSettingsReportsEverySettingTheDriverHas) {
  const DeviceSettings s = backend_->ReadSettings(0);
  EXPECT_EQ(s.compute_mode, 0);
  EXPECT_EQ(s.ecc_current, true);
  EXPECT_EQ(s.ecc_pending, true);
  EXPECT_EQ(s.persistence_mode, true);
  EXPECT_EQ(s.app_sm_clock_mhz, 1980u);
  EXPECT_EQ(s.app_mem_clock_mhz, 2619u);
  EXPECT_EQ(s.default_app_sm_clock_mhz, 1980u);
  EXPECT_EQ(s.default_app_mem_clock_mhz, 2619u);
  EXPECT_EQ(s.power_limit_w, 700.0);
  EXPECT_EQ(s.default_power_limit_w, 700.0);
  EXPECT_EQ(s.min_power_limit_w, 350.0);
  EXPECT_EQ(s.max_power_limit_w, 700.0);
  ASSERT_EQ(s.supported_mem_clocks_mhz, std::vector<unsigned>({2619}));
  ASSERT_EQ(s.supported_sm_clocks_mhz.size(), 1u);
  EXPECT_EQ(s.supported_sm_clocks_mhz[0].size(), 110u);
  EXPECT_EQ(s.supported_sm_clocks_mhz[0].front(), 1980u);
  EXPECT_EQ(s.inforom_valid, true);
}

TEST_F(NvmlSettingsSimTest, WhatTheDriverDoesNotSupportIsAbsent) {
  const DeviceSettings s = backend_->ReadSettings(1);
  EXPECT_FALSE(s.compute_mode.has_value());
  EXPECT_FALSE(s.ecc_current.has_value());
  EXPECT_FALSE(s.ecc_pending.has_value());
  EXPECT_FALSE(s.inforom_valid.has_value());
  EXPECT_EQ(s.power_limit_w, 300.0) << "the rest is still read";
  EXPECT_EQ(s.min_power_limit_w, 150.0);
}

TEST_F(NvmlSettingsSimTest, SettersChangeWhatReadSettingsReports) {
  ASSERT_TRUE(backend_->SetComputeMode(0, 2).ok());
  ASSERT_TRUE(backend_->SetApplicationClocks(0, 2619, 1500).ok());
  ASSERT_TRUE(backend_->SetPowerLimit(0, 450.4).ok());
  const DeviceSettings s = backend_->ReadSettings(0);
  EXPECT_EQ(s.compute_mode, 2);
  EXPECT_EQ(s.app_sm_clock_mhz, 1500u);
  EXPECT_EQ(s.app_mem_clock_mhz, 2619u);
  EXPECT_EQ(s.default_app_sm_clock_mhz, 1980u);
  EXPECT_EQ(s.power_limit_w, 450.4) << "watts to mW and back";
  EXPECT_EQ(s.default_power_limit_w, 700.0);
}

// Fields 110-115, 160-163 and 235-238 read the same calls per tick: what ReadSettings reports, and
// what a setter changed.
TEST_F(NvmlSettingsSimTest, ClockLimitAndLinkFieldsFollowTheSettings) {
  std::vector<FieldIndex> fields;
  for (FieldId id : {110, 111, 113, 114, 115, 160, 161, 162, 163, 164, 235, 236, 237, 238})
    fields.push_back(F(id));
  Sample s;
  backend_->Read(0, fields, s);
  ASSERT_EQ(s.state, DeviceState::kOk);
  EXPECT_EQ(s.values[F(110)], 1980.0);
  EXPECT_EQ(s.values[F(111)], 2619.0);
  EXPECT_EQ(s.values[F(113)], 1980.0);
  EXPECT_EQ(s.values[F(114)], 2619.0);
  EXPECT_EQ(s.values[F(115)], 1683.0) << "the simulator's default: 85 % of the SM clock";
  EXPECT_EQ(s.values[F(160)], 700.0);
  EXPECT_EQ(s.values[F(161)], 350.0);
  EXPECT_EQ(s.values[F(162)], 700.0);
  EXPECT_EQ(s.values[F(163)], 700.0);
  EXPECT_EQ(s.values[F(235)], 5.0) << "Hopper: PCIe gen 5";
  EXPECT_EQ(s.values[F(236)], 16.0);
  EXPECT_EQ(s.values[F(237)], 5.0);
  EXPECT_EQ(s.values[F(238)], 16.0);

  ASSERT_TRUE(backend_->SetApplicationClocks(0, 2619, 1500).ok());
  ASSERT_TRUE(backend_->SetPowerLimit(0, 450.4).ok());
  backend_->Read(0, fields, s);
  EXPECT_EQ(s.values[F(110)], 1500.0);
  EXPECT_EQ(s.values[F(113)], 1980.0) << "the maximum stays";
  EXPECT_EQ(s.values[F(160)], 450.4);
  EXPECT_EQ(s.values[F(164)], 450.4);
  EXPECT_EQ(s.values[F(163)], 700.0) << "the default stays";

  backend_->Read(1, fields, s);  // the A40: PCIe gen 4
  EXPECT_EQ(s.values[F(235)], 4.0);
  EXPECT_EQ(s.values[F(161)], 150.0);
}

TEST_F(NvmlSettingsSimTest, ValuesTheDriverRejectsAreInvalidArguments) {
  auto code = [](const Status& st) { return st.ok() ? ErrorCode::kInternal : st.error().code; };
  EXPECT_EQ(code(backend_->SetComputeMode(0, 5)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(backend_->SetApplicationClocks(0, 2619, 1501)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(backend_->SetPowerLimit(0, 349.9994)), ErrorCode::kInvalidArgument)
      << "349999 mW is below the 350 W minimum";
  EXPECT_TRUE(backend_->SetPowerLimit(0, 349.9996).ok()) << "rounds to 350000 mW";
  EXPECT_EQ(code(backend_->SetPowerLimit(0, 700.001)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(backend_->SetPowerLimit(0, -1)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(backend_->SetPowerLimit(0, std::nan(""))), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code(backend_->SetPowerLimit(0, std::numeric_limits<double>::infinity())),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(backend_->ReadSettings(0).power_limit_w, 350.0);
}

TEST_F(NvmlSettingsSimTest, PermissionAndSupportErrorsAreTheirOwnCodes) {
  auto code = [](const Status& st) { return st.ok() ? ErrorCode::kInternal : st.error().code; };
  EXPECT_EQ(code(backend_->SetPowerLimit(1, 200)), ErrorCode::kNoPermission);
  EXPECT_EQ(code(backend_->SetApplicationClocks(1, 1500, 1500)), ErrorCode::kNoPermission);
  EXPECT_EQ(code(backend_->SetComputeMode(1, 0)), ErrorCode::kUnavailable) << "unsupported";
  EXPECT_EQ(code(backend_->SetEccMode(1, true)), ErrorCode::kUnavailable) << "ecc: false";
  EXPECT_EQ(backend_->ReadSettings(1).power_limit_w, 300.0) << "nothing changed";
}

TEST_F(NvmlSettingsSimTest, EccChangeIsPendingUntilTheSimulatedReset) {
  ASSERT_TRUE(backend_->SetEccMode(0, false).ok());
  ASSERT_TRUE(backend_->SetComputeMode(0, 3).ok());
  DeviceSettings s = backend_->ReadSettings(0);
  EXPECT_EQ(s.ecc_current, true);
  EXPECT_EQ(s.ecc_pending, false);
  ASSERT_TRUE(backend_->ResetGpu(0).ok());
  s = backend_->ReadSettings(0);
  EXPECT_EQ(s.ecc_current, false);
  EXPECT_EQ(s.ecc_pending, false);
  EXPECT_EQ(s.compute_mode, 0) << "back to the default";
}

TEST_F(NvmlSettingsSimTest, ALostGpuIsNotFound) {
  ASSERT_TRUE(backend_->SetSimulatedClock(5));
  auto code = [](const Status& st) { return st.ok() ? ErrorCode::kInternal : st.error().code; };
  EXPECT_EQ(code(backend_->SetComputeMode(2, 0)), ErrorCode::kNotFound);
  EXPECT_EQ(code(backend_->SetPowerLimit(2, 300)), ErrorCode::kNotFound);
  EXPECT_EQ(code(backend_->ResetGpu(2)), ErrorCode::kNotFound);
  const DeviceSettings s = backend_->ReadSettings(2);
  EXPECT_FALSE(s.compute_mode.has_value());
  EXPECT_FALSE(s.power_limit_w.has_value());
  EXPECT_TRUE(s.supported_mem_clocks_mhz.empty());
  EXPECT_FALSE(s.inforom_valid.has_value());
}

TEST_F(NvmlSettingsSimTest, InforomFieldIsValidCorruptOrUnsupported) {
  Sample s = ReadInforom(0, 1.99);
  EXPECT_EQ(s.values[F(84)], 1.0);
  s = ReadInforom(0, 2);
  EXPECT_EQ(s.values[F(84)], 0.0) << "a corrupt InfoROM is a reading, not a failure";
  EXPECT_FALSE(s.unsupported[F(84)]);
  EXPECT_EQ(backend_->ReadSettings(0).inforom_valid, false);
  s = ReadInforom(0, 4);
  EXPECT_EQ(s.values[F(84)], 1.0);
  s = ReadInforom(1, 0);
  EXPECT_FALSE(s.values[F(84)].has_value());
  EXPECT_TRUE(s.unsupported[F(84)]);
}

// --- Through fakes: what a real driver or an old one does. ---

class NvmlSettingsFakeTest : public ::testing::Test {
 protected:
  void SetUp() override { fake_.devices.resize(1); }
  std::unique_ptr<NvmlBackend> Open(const NvmlApi& api) {
    auto b = NvmlBackend::Create(api, nullptr, "fake");
    EXPECT_TRUE(b.ok());
    return std::move(b).value();
  }
  FakeNvml fake_;
};

int g_reset_calls = 0;
nvmlReturn_t g_set_rc = NVML_SUCCESS;

TEST_F(NvmlSettingsFakeTest, ARealGpuIsNeverReset) {
  g_reset_calls = 0;
  NvmlApi api = testing::MakeFakeApi(&fake_);
  // Even a library that exported the simulator's reset is not asked unless it is the simulator.
  api.GpulseSimResetDevice = [](unsigned) -> int {
    ++g_reset_calls;
    return NVML_SUCCESS;
  };
  auto backend = Open(api);
  ASSERT_FALSE(backend->info().simulated);
  const Status st = backend->ResetGpu(0);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(st.error().message.find("--allow-reset"), std::string::npos) << st.error().message;
  EXPECT_EQ(g_reset_calls, 0);
}

TEST_F(NvmlSettingsFakeTest, MissingSymbolsLeaveSettingsAbsentAndSettersUnavailable) {
  auto backend = Open(testing::MakeFakeApi(&fake_));
  const DeviceSettings s = backend->ReadSettings(0);
  EXPECT_FALSE(s.compute_mode || s.ecc_current || s.ecc_pending || s.persistence_mode ||
               s.app_sm_clock_mhz || s.app_mem_clock_mhz || s.default_app_sm_clock_mhz ||
               s.default_app_mem_clock_mhz || s.min_power_limit_w || s.max_power_limit_w ||
               s.default_power_limit_w || s.inforom_valid);
  EXPECT_TRUE(s.supported_mem_clocks_mhz.empty());
  for (const Status& st : {backend->SetComputeMode(0, 0), backend->SetEccMode(0, true),
                           backend->SetApplicationClocks(0, 1, 1), backend->SetPowerLimit(0, 1)}) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kUnavailable);
  }
  const FieldIndex fields[] = {F(84)};
  Sample sample;
  backend->Read(0, fields, sample);
  EXPECT_TRUE(sample.unsupported[F(84)]) << "no nvmlDeviceValidateInforom";
}

TEST_F(NvmlSettingsFakeTest, EveryDriverErrorMapsToItsCode) {
  NvmlApi api = testing::MakeFakeApi(&fake_);
  api.DeviceSetComputeMode = [](nvmlDevice_t, int) { return g_set_rc; };
  auto backend = Open(api);
  const std::pair<nvmlReturn_t, ErrorCode> cases[] = {
      {NVML_ERROR_NO_PERMISSION, ErrorCode::kNoPermission},
      {NVML_ERROR_NOT_SUPPORTED, ErrorCode::kUnavailable},
      {NVML_ERROR_INVALID_ARGUMENT, ErrorCode::kInvalidArgument},
      {NVML_ERROR_GPU_IS_LOST, ErrorCode::kNotFound},
      {NVML_ERROR_UNKNOWN, ErrorCode::kUnavailable},
  };
  for (const auto& [rc, code] : cases) {
    g_set_rc = rc;
    const Status st = backend->SetComputeMode(0, 1);
    ASSERT_FALSE(st.ok()) << rc;
    EXPECT_EQ(st.error().code, code) << rc;
  }
  g_set_rc = NVML_SUCCESS;
  EXPECT_TRUE(backend->SetComputeMode(0, 1).ok());
}

}  // namespace
}  // namespace gpulse::nvml
