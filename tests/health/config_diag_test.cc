// Configuration targets against a GPU's ranges, and the level-1 diagnostics over fixtures.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "health/config_target.h"
#include "health/diag.h"

namespace gpulse::health {
namespace {

using nlohmann::json;

DeviceSettings H100() {
  DeviceSettings s;
  s.compute_mode = 0;
  s.ecc_current = s.ecc_pending = true;
  s.persistence_mode = true;
  s.app_mem_clock_mhz = 2619;
  s.app_sm_clock_mhz = 1980;
  s.power_limit_w = 700;
  s.min_power_limit_w = 200;
  s.max_power_limit_w = 700;
  s.supported_mem_clocks_mhz = {2619};
  s.supported_sm_clocks_mhz = {{1980, 1965, 1950, 345}};
  s.inforom_valid = true;
  return s;
}

TEST(ConfigJson, ParsesAndRefuses) {
  auto t = ConfigFromJson(json{{"compute_mode", 3},
                               {"power_limit_w", 500},
                               {"app_clocks", {{"mem_mhz", 2619}, {"sm_mhz", 1950}}}});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t->compute_mode, 3);
  EXPECT_EQ(ConfigToJson(*t)["app_clocks"]["sm_mhz"], 1950);
  const json bad[] = {json::object(),
                      {{"compute_mode", 1}},
                      {{"compute_mode", 7}},
                      {{"ecc", 1}},
                      {{"sync_boost", true}},
                      {{"power_limit_w", -1}},
                      {{"app_clocks", {{"mem_mhz", 2619}}}},
                      {{"fan", 50}}};
  for (const json& j : bad) EXPECT_FALSE(ConfigFromJson(j).ok()) << j.dump();
}

TEST(CheckTarget, PowerLimitOutsideTheRangeNamesTheRange) {
  ConfigTarget t;
  t.power_limit_w = 900;
  Status s = CheckTarget(t, H100(), 3);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message, "GPU 3: power limit 900 W is outside the allowed range 200..700 W");
  t.power_limit_w = 500;
  EXPECT_TRUE(CheckTarget(t, H100(), 3).ok());
}

TEST(CheckTarget, ApplicationClocksMustBeASupportedPair) {
  ConfigTarget t;
  t.app_mem_clock_mhz = 1215;
  t.app_sm_clock_mhz = 1980;
  EXPECT_NE(CheckTarget(t, H100(), 0).error().message.find("allowed: 2619"), std::string::npos);
  t.app_mem_clock_mhz = 2619;
  t.app_sm_clock_mhz = 1000;
  EXPECT_FALSE(CheckTarget(t, H100(), 0).ok());
  t.app_sm_clock_mhz = 1965;
  EXPECT_TRUE(CheckTarget(t, H100(), 0).ok());
}

TEST(CheckTarget, ASettingTheGpuDoesNotReportIsUnsupported) {
  ConfigTarget t;
  t.ecc = false;
  DeviceSettings s = H100();
  s.ecc_current.reset();
  EXPECT_EQ(CheckTarget(t, s, 0).error().code, ErrorCode::kUnavailable);
}

TEST(Differences, OnlyWhatDiffersAndEccByItsPendingMode) {
  ConfigTarget t;
  t.compute_mode = 0;
  t.power_limit_w = 500;
  t.ecc = false;
  auto d = Differences(t, H100());
  EXPECT_EQ(d, (std::vector<ConfigSetting>{ConfigSetting::kEcc, ConfigSetting::kPowerLimit}));
  DeviceSettings s = H100();
  s.ecc_pending = false;  // set, waiting for a reset: nothing more to do
  s.power_limit_w = 500;
  EXPECT_TRUE(Differences(t, s).empty());
}

TEST(MergeTargets, LaterSettingsWin) {
  ConfigTarget a, b;
  a.compute_mode = 3;
  a.power_limit_w = 500;
  b.power_limit_w = 600;
  ConfigTarget m = MergeTargets(a, b);
  EXPECT_EQ(*m.compute_mode, 3);
  EXPECT_EQ(*m.power_limit_w, 600);
}

class Diag : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("gpulse-diag-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_ / "proc");
    std::filesystem::create_directories(root_ / "dev");
    Write("proc/modules", "nvidia_uvm 1 0 - Live 0x0\nnvidia 2 1 nvidia_uvm, Live 0x0\n");
    for (const char* n : {"nvidiactl", "nvidia0"}) Write(std::string("dev/") + n, "");
    system_.library = "/usr/lib/libnvidia-ml.so.1";
    system_.library_version = "12.550.54.15";
    system_.driver_version = "550.54.15";
    DiagGpu g;
    g.index = 0;
    g.minor_number = 0;
    g.settings = H100();
    in_.system = &system_;
    in_.gpus = {g};
    in_.procfs_root = (root_ / "proc").string();
    in_.dev_root = (root_ / "dev").string();
    in_.load_library = [](const std::string&, std::string*) { return true; };
    in_.getenv = [](const char*) -> const char* { return nullptr; };
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  DiagTest Find(const std::string& name) {
    for (const DiagTest& t : RunLevel1(in_)) {
      if (t.name == name) return t;
    }
    ADD_FAILURE() << name;
    return {};
  }

  std::filesystem::path root_;
  SystemInfo system_;
  DiagInputs in_;
};

TEST_F(Diag, AHealthyNodePassesEveryCheckInDcgmisOrder) {
  auto tests = RunLevel1(in_);
  std::vector<std::string> names;
  for (const auto& t : tests) {
    names.push_back(t.name);
    EXPECT_EQ(t.result, DiagResult::kPass) << t.name << ": " << t.reason;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Denylist", "NVML Library", "CUDA Main Library",
                                             "Permissions and OS Blocks", "Persistence Mode",
                                             "Environment Variables", "Page Retirement/Row Remap",
                                             "Graphics Processes", "Inforom"}));
  EXPECT_EQ(OverallResult(tests), DiagResult::kPass);
}

TEST_F(Diag, NouveauLoadedFailsTheDenylist) {
  Write("proc/modules", "nouveau 2 0 - Live 0x0\n");
  EXPECT_EQ(Find("Denylist").result, DiagResult::kFail);
}

TEST_F(Diag, AMissingDeviceNodeFailsPermissions) {
  std::filesystem::remove(root_ / "dev/nvidia0");
  DiagTest t = Find("Permissions and OS Blocks");
  EXPECT_EQ(t.result, DiagResult::kFail);
  EXPECT_NE(t.reason.find("nvidia0 does not exist"), std::string::npos);
}

// Issue 40: `diag -r 1` always failed on simulated GPUs (no /dev/nvidia* on the machine), so the
// documented example exited 1. Simulated GPUs skip the check unless --dev-root names a fixture.
TEST_F(Diag, SimulatedGpusSkipPermissionsUnlessTheDevRootIsMoved) {
  system_.simulated = true;
  in_.dev_root = kDefaultDevRoot;
  DiagTest t = Find("Permissions and OS Blocks");
  EXPECT_EQ(t.result, DiagResult::kSkip) << t.reason;
  EXPECT_NE(t.reason.find("simulated"), std::string::npos);
  in_.dev_root = (root_ / "dev").string();
  std::filesystem::remove(root_ / "dev/nvidia0");
  EXPECT_EQ(Find("Permissions and OS Blocks").result, DiagResult::kFail) << "a fixture is checked";
}

TEST_F(Diag, CudaThatDoesNotLoadFailsAndSimulatedGpusSkip) {
  in_.load_library = [](const std::string&, std::string* e) {
    *e = "not found";
    return false;
  };
  EXPECT_EQ(Find("CUDA Main Library").result, DiagResult::kFail);
  system_.simulated = true;
  EXPECT_EQ(Find("CUDA Main Library").result, DiagResult::kSkip);
}

TEST_F(Diag, PersistenceOffWarnsAndEnvironmentVariablesWarn) {
  in_.gpus[0].settings.persistence_mode = false;
  EXPECT_EQ(Find("Persistence Mode").result, DiagResult::kWarn);
  in_.getenv = [](const char* n) -> const char* {
    return std::string(n) == "CUDA_LAUNCH_BLOCKING" ? "1" : nullptr;
  };
  DiagTest t = Find("Environment Variables");
  EXPECT_EQ(t.result, DiagResult::kWarn);
  EXPECT_NE(t.reason.find("CUDA_LAUNCH_BLOCKING"), std::string::npos);
}

TEST_F(Diag, RetirementGraphicsAndInforom) {
  in_.gpus[0].reading.retired_pending = 1;
  EXPECT_EQ(Find("Page Retirement/Row Remap").result, DiagResult::kWarn);
  in_.gpus[0].reading.row_remap_failure = 1;
  EXPECT_EQ(Find("Page Retirement/Row Remap").result, DiagResult::kFail);
  GpuProcess p;
  p.pid = 42;
  p.graphics = true;
  in_.gpus[0].processes.processes = std::vector<GpuProcess>{p};
  EXPECT_EQ(Find("Graphics Processes").result, DiagResult::kWarn);
  in_.gpus[0].settings.inforom_valid = false;
  EXPECT_EQ(Find("Inforom").result, DiagResult::kFail);
  EXPECT_EQ(OverallResult(RunLevel1(in_)), DiagResult::kFail);
}

}  // namespace
}  // namespace gpulse::health
