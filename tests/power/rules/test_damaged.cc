// Damaged manifests and inputs (upstream test_power_validator.py "Damaged manifest"): every damage
// is a clean failure line, never a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>

#include "power/test_util.h"

namespace gpulse::power {
namespace {

using namespace testing;

struct Damage {
  const char* name;
  std::function<void(Json&)> apply;
};

class DamagedManifest : public ::testing::TestWithParam<Damage> {};

TEST_P(DamagedManifest, BecomesACleanFailure) {
  Package p;
  BuildValid1P1D(p);
  GetParam().apply(p.manifest);
  ValidationReport r = RunValidator(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "manifest malformed: ")) << Failures(r);
}

Json& Dev0(Json& m) { return m["expected_devices"][0]; }
Json& Asg0(Json& m) { return m["expected_devices"][0]["assignments"][0]; }

INSTANTIATE_TEST_SUITE_P(
    Upstream, DamagedManifest,
    ::testing::Values(
        Damage{"null_gpu_index", [](Json& m) { Dev0(m)["gpu_index"] = nullptr; }},
        Damage{"missing_hostname", [](Json& m) { Dev0(m).erase("hostname"); }},
        Damage{"non_numeric_concurrency",
               [](Json& m) { m["expected_windows"][0]["concurrency"] = "four"; }},
        Damage{"null_window_entry", [](Json& m) { m["expected_windows"][0] = nullptr; }},
        Damage{"string_worker_index", [](Json& m) { Asg0(m)["worker_index"] = "0"; }},
        Damage{"bogus_role", [](Json& m) { Asg0(m)["worker_role"] = "bogus"; }},
        Damage{"bool_concurrency", [](Json& m) { m["expected_windows"][0]["concurrency"] = true; }},
        Damage{"zero_concurrency", [](Json& m) { m["expected_windows"][0]["concurrency"] = 0; }},
        Damage{"negative_index", [](Json& m) { Dev0(m)["gpu_index"] = -1; }},
        Damage{"bool_het_group", [](Json& m) { Asg0(m)["het_group"] = true; }},
        Damage{"empty_assignments", [](Json& m) { Dev0(m)["assignments"] = Json::array(); }},
        Damage{"empty_hostname", [](Json& m) { Dev0(m)["hostname"] = ""; }},
        Damage{"devices_not_a_list", [](Json& m) { m["expected_devices"] = "all"; }},
        Damage{"huge_gpu_index", [](Json& m) { Dev0(m)["gpu_index"] = 18446744073709551615ull; }}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(DamagedManifestMore, MalformedTopologyPreservesWireContractFailures) {
  Package p;
  BuildValid1P1D(p);
  p.manifest["expected_devices"][0]["gpu_index"] = nullptr;
  p.manifest["unit"] = "mW";
  ValidationReport r = RunValidator(p);
  EXPECT_TRUE(HasFail(r, "manifest malformed: "));
  EXPECT_TRUE(HasFail(r, "unit must be \"W\""));
}

TEST(DamagedManifestMore, NullDevicesListFailsWithExpectedDeviceMissing) {
  Package p;
  BuildValid1P1D(p);
  p.manifest["expected_devices"] = nullptr;
  ValidationReport r = RunValidator(p);
  EXPECT_TRUE(HasFail(r, "expected_device_missing (device identity/topology)")) << Failures(r);
}

TEST(DamagedManifestMore, NullWindowsListFailsWithNoExpectedWindow) {
  Package p;
  BuildValid1P1D(p);
  p.manifest["expected_windows"] = nullptr;
  ValidationReport r = RunValidator(p);
  EXPECT_TRUE(HasFail(r, "no expected measurement window")) << Failures(r);
  EXPECT_EQ(r.recomputed_publication_valid, false);
}

TEST(DamagedManifestMore, NonObjectManifestIsReported) {
  Package p;
  BuildValid1P1D(p);
  p.Write();
  WriteText(p.power_dir / "manifest.json", "[1, 2, 3]");
  ValidationReport r = ValidatePackage({.power_dir = p.power_dir, .result_root = p.result_root});
  EXPECT_EQ(r.failures, std::vector<std::string>{"manifest malformed: not an object (list)"});
}

TEST(DamagedManifestMore, UnreadableJsonIsReported) {
  for (std::string text :
       {std::string("{\"schema_version\": 1,"), std::string("\xff\xfe{}"), std::string(""),
        std::string(100000, '['), std::string("{\"a\": \"\xc3\x28\"}")}) {
    Package p;
    BuildValid1P1D(p);
    p.Write();
    WriteText(p.power_dir / "manifest.json", text);
    ValidationReport r = ValidatePackage({.power_dir = p.power_dir, .result_root = p.result_root});
    EXPECT_FALSE(r.ok);
    ASSERT_EQ(r.failures.size(), 1u);
    EXPECT_EQ(r.failures[0].rfind("manifest unreadable: ", 0), 0u) << r.failures[0];
  }
}

TEST(DamagedManifestMore, TruncatedSamplesFileIsMalformedNotACrash) {
  Package p;
  BuildValid1P1D(p);
  std::string csv = CsvText(p.rows);
  p.csv_override = csv.substr(0, csv.size() - 7);  // cut inside the last row
  ValidationReport r = RunValidator(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "in samples.csv")) << Failures(r);
}

TEST(DamagedManifestMore, SamplesCsvMissingIsReported) {
  Package p;
  BuildValid1P1D(p);
  p.write_csv = false;
  ValidationReport r = RunValidator(p);
  EXPECT_TRUE(HasFail(r, "samples_csv_missing in samples.csv")) << Failures(r);
  EXPECT_TRUE(HasFail(r, "samples_sha256 could not be verified")) << Failures(r);
}

TEST(DamagedManifestMore, SamplesCsvAsDirectoryIsAFailureLine) {
  Package p;
  BuildValid1P1D(p);
  p.write_csv = false;
  std::filesystem::create_directories(p.power_dir / "samples.csv");
  ValidationReport r = RunValidator(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "samples_csv_malformed in samples.csv")) << Failures(r);
}

TEST(DamagedManifestMore, HugeStringFieldsDoNotCrash) {
  Package p;
  BuildValid1P1D(p);
  p.manifest["job_id"] = std::string(5 << 20, 'j');
  p.manifest["expected_devices"][0]["hostname"] = std::string(1 << 20, 'h');
  ValidationReport r = RunValidator(p);
  EXPECT_FALSE(r.ok);
  for (const auto& f : r.failures) EXPECT_LT(f.size(), 4096u) << "failure lines stay readable";
}

TEST(DamagedManifestMore, UnreadableWindowsDirIsACleanFailure) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any directory";
  Package p;
  BuildValid1P1D(p);
  p.Write();
  std::filesystem::permissions(p.power_dir / "windows", std::filesystem::perms::none);
  ValidationReport r = ValidatePackage({.power_dir = p.power_dir, .result_root = p.result_root});
  std::filesystem::permissions(p.power_dir / "windows", std::filesystem::perms::owner_all);
  EXPECT_TRUE(HasFail(r, "measurement_window_artifact_path_invalid (windows)")) << Failures(r);
}

TEST(DamagedManifestMore, WindowsDirReplacedByAFileIsACleanFailure) {
  Package p;
  BuildValid1P1D(p);
  p.Write();
  std::filesystem::remove_all(p.power_dir / "windows");
  WriteText(p.power_dir / "windows", "not a dir");
  ValidationReport r = ValidatePackage({.power_dir = p.power_dir, .result_root = p.result_root});
  EXPECT_TRUE(HasFail(r, "measurement_window_artifact_path_invalid (windows)")) << Failures(r);
}

}  // namespace
}  // namespace gpulse::power
