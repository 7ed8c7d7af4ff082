// Wire contract (upstream test_power_validator.py "Wire contract": 29 parametrized rejections, each
// failure naming the key, plus lifecycle order, exporter identity and the stored-false veto).
#include <gtest/gtest.h>

#include "power/test_util.h"

namespace gpulse::power {
namespace {

using namespace testing;

struct WireCase {
  const char* name;
  const char* key;
  Json value;
};

Json Nan() { return "NaN"; }  // what a Python NaN literal reads as (json_io.h)

class WireContract : public ::testing::TestWithParam<WireCase> {};

TEST_P(WireContract, RejectionNamesTheKey) {
  Package p;
  BuildValid1P1D(p);
  p.manifest[GetParam().key] = GetParam().value;
  ValidationReport r = RunValidator(p);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, GetParam().key)) << Failures(r);
}

INSTANTIATE_TEST_SUITE_P(
    Upstream29, WireContract,
    ::testing::Values(
        WireCase{"schema_version_999", "schema_version", 999},
        WireCase{"schema_version_true", "schema_version", true},
        WireCase{"foreign_producer", "producer", "someone-else"},
        WireCase{"source_metric_gpu_temp", "source_metric", "GPU_TEMP"},
        WireCase{"unit_mw", "unit", "mW"},
        WireCase{"power_scope_whole_node", "power_scope", "whole_node"},
        WireCase{"timestamp_source_worker_clock", "timestamp_source", "worker_node_clock"},
        WireCase{"producer_version_empty", "producer_version", ""},
        WireCase{"producer_version_object", "producer_version", Json::object()},
        WireCase{"git_commit_short", "producer_git_commit", "abc123"},
        WireCase{"job_id_empty", "job_id", ""},
        WireCase{"run_name_list", "run_name", Json::array()},
        WireCase{"started_null", "started_at_unix", nullptr},
        WireCase{"stopped_null", "stopped_at_unix", nullptr},
        WireCase{"interval_zero", "sample_interval_seconds", 0},
        WireCase{"interval_3_1", "sample_interval_seconds", 3.1},
        WireCase{"request_timeout_negative", "request_timeout_seconds", -1},
        WireCase{"max_scrape_negative", "max_scrape_duration_seconds", -0.1},
        WireCase{"max_scrape_nan", "max_scrape_duration_seconds", Nan()},
        WireCase{"max_scrape_object", "max_scrape_duration_seconds", Json::object()},
        WireCase{"scrape_count_negative", "scrape_count", -1},
        WireCase{"sample_row_count_text", "sample_row_count", "many"},
        WireCase{"publication_valid_none", "publication_valid", nullptr},
        WireCase{"publication_valid_text", "publication_valid", "true"},
        WireCase{"publication_valid_int", "publication_valid", 1},
        WireCase{"reason_codes_not_list", "reason_codes", "not-a-list"},
        WireCase{"reason_codes_unknown", "reason_codes", Json::array({"made_up_reason"})},
        WireCase{"reason_codes_duplicated", "reason_codes",
                 Json::array({"endpoint_timeout", "endpoint_timeout"})},
        WireCase{"dcgm_exporter_none", "dcgm_exporter", nullptr}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(WireContractNan, PythonNanLiteralInManifestIsReadAndRejectedByKey) {
  Package p;
  BuildValid1P1D(p);
  p.Write();
  std::string text = ReadText(p.power_dir / "manifest.json");
  auto pos = text.find("\"max_scrape_duration_seconds\": 0.05");
  ASSERT_NE(pos, std::string::npos);
  text.replace(pos, 35, "\"max_scrape_duration_seconds\": NaN");
  WriteText(p.power_dir / "manifest.json", text);
  ValidationReport r = ValidatePackage({.power_dir = p.power_dir, .result_root = p.result_root});
  EXPECT_TRUE(HasFail(r, "max_scrape_duration_seconds must be null or a finite number >= 0"))
      << Failures(r);
}

class Wire : public ::testing::Test {
 protected:
  void SetUp() override { BuildValid1P1D(pkg_); }
  Package pkg_;
};

TEST_F(Wire, StartAfterStopFails) {
  pkg_.manifest["started_at_unix"] = kT0 + 100;
  EXPECT_TRUE(HasFail(RunValidator(pkg_), "stopped_at_unix must not be before started_at_unix"));
}

TEST_F(Wire, StatusMustBeComplete) {
  pkg_.manifest["status"] = "incomplete";
  EXPECT_TRUE(HasFail(RunValidator(pkg_), "status must be \"complete\""));
}

TEST_F(Wire, IncompleteExporterIdentityFails) {
  struct Case {
    const char* key;
    Json value;
  };
  for (const auto& c : {Case{"container_image_sha256", 123}, Case{"container_image_sha256", "x"},
                        Case{"container_image_sha256", std::string(64, 'A')}, Case{"port", nullptr},
                        Case{"port", 0}, Case{"port", true}, Case{"port", 65536},
                        Case{"command", ""}, Case{"container_image_resolved", ""}}) {
    Package p;
    BuildValid1P1D(p);
    p.manifest["dcgm_exporter"][c.key] = c.value;
    ValidationReport r = RunValidator(p);
    EXPECT_FALSE(r.ok) << c.key;
    EXPECT_TRUE(HasFail(r, std::string("dcgm_exporter.") + c.key)) << c.key << "\n" << Failures(r);
  }
}

TEST_F(Wire, OlderProducerIdentityIsAccepted) {
  pkg_.manifest["producer_git_commit"] = nullptr;
  pkg_.manifest["dcgm_exporter"]["container_image_sha256"] = nullptr;
  ValidationReport r = RunValidator(pkg_);
  EXPECT_TRUE(r.ok) << Failures(r);
}

TEST_F(Wire, LocalImageDigestIsAccepted) {
  pkg_.manifest["dcgm_exporter"]["container_image_resolved"] = "/images/dcgm-exporter.sqsh";
  pkg_.manifest["dcgm_exporter"]["container_image_sha256"] = std::string(64, 'a');
  pkg_.manifest["producer_git_commit"] = std::string(64, 'b');
  EXPECT_TRUE(RunValidator(pkg_).ok);
}

TEST_F(Wire, StoredFalseVerdictVetoesAValidPackage) {
  pkg_.manifest["publication_valid"] = false;
  ValidationReport r = RunValidator(pkg_);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(HasFail(r, "stored publication_valid is false"));
  EXPECT_TRUE(HasFail(r, "publication_valid is False, recomputed True"));
}

}  // namespace
}  // namespace gpulse::power
