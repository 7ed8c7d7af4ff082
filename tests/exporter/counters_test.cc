// The counters file: dcgm-exporter's CSV format, its errors (file, line, reason) and the default
// set.
#include "exporter/counters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gpulse::exporter {
namespace {

TEST(Counters, ReadsDcgmExporterFormat) {
  auto set = ParseCounters(
      "# Format\n"
      "# If line starts with a '#' it is considered a comment\n"
      "DCGM_FI_DEV_SM_CLOCK ,  gauge, SM clock frequency (in MHz).\n"
      "\n"
      "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Total energy consumption since boot (in "
      "mJ).\n"
      "DCGM_FI_DEV_BOARD_POWER_WATTS, gauge, \"Power, averaged (in W).\"\n"
      "DCGM_FI_DRIVER_VERSION,        label, Driver Version\n",
      "c.csv");
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->counters.size(), 3u);
  EXPECT_EQ(set->counters[0].name, "DCGM_FI_DEV_SM_CLOCK");
  EXPECT_EQ(set->counters[0].type, PromType::kGauge);
  EXPECT_EQ(set->counters[0].help, "SM clock frequency (in MHz).");
  EXPECT_EQ(set->counters[1].type, PromType::kCounter);
  EXPECT_EQ(set->counters[2].name, "DCGM_FI_DEV_BOARD_POWER_WATTS")
      << "a 4.6 alias keeps its spelling";
  EXPECT_EQ(FieldAt(set->counters[2].field).id, 155);
  EXPECT_EQ(set->counters[2].help, "Power, averaged (in W).");
  ASSERT_EQ(set->labels.size(), 1u);
  EXPECT_EQ(set->labels[0].name, "DCGM_FI_DRIVER_VERSION");
  EXPECT_TRUE(set->warnings.empty());
}

TEST(Counters, FieldsGpulseCannotReadAreSkippedWithAWarning) {
  auto set = ParseCounters(
      "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n"
      "DCGM_FI_PROF_NVOFA1_ACTIVE, gauge, Ratio of cycles NVOFA engine 1 is active.\n"
      "DCGM_FI_PROF_C2C_TX_ALL_BYTES, gauge, C2C.\n"
      "DCGM_FI_DEV_SERIAL, label, Serial\n",
      "d.csv");
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->counters.size(), 1u);
  ASSERT_EQ(set->warnings.size(), 3u);
  EXPECT_EQ(set->warnings[0].rfind("d.csv:2: skipping DCGM_FI_PROF_NVOFA1_ACTIVE: profiling", 0),
            0u)
      << set->warnings[0];
  EXPECT_NE(set->warnings[1].find("d.csv:3:"), std::string::npos);
}

TEST(Counters, BadLinesFailWithFileLineAndReason) {
  struct Case {
    const char* text;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{
           {"DCGM_FI_DEV_GPU_UTIL, gauge\n", "f.csv:1: expected 3 comma-separated fields"},
           {"# ok\nDCGM_FI_DEV_GPU_UTIL, gauge, a, b\n", "f.csv:2: expected 3"},
           {"DCGM_FI_DEV_NOPE, gauge, x\n", "f.csv:1: unknown field \"DCGM_FI_DEV_NOPE\""},
           {"DCGM_FI_DEV_GPU_UTIL, histogram, x\n", "is not gauge, counter or label"},
           {"DCGM_FI_DEV_GPU_UTIL, gauge, x\nDCGM_FI_DEV_GPU_UTIL_RATIO, gauge, y\n",
            "f.csv:2: DCGM_FI_DEV_GPU_UTIL is listed twice"},
           {"DCGM_FI_DEV_GPU_UTIL, label, x\n", "is a numeric field"},
           {"DCGM_FI_DRIVER_VERSION, gauge, x\n", "is a string field"},
           {"DCGM_FI_DEV_GPU_UTIL, gauge, \"unterminated\n", "unterminated quoted field"},
           {"155, gauge, x\n", "unknown field \"155\""},
           {"# nothing\n", "no field gpulse can read"},
           {"DCGM_FI_PROF_NVOFA1_ACTIVE, gauge, x\n", "no field gpulse can read"},
       }) {
    auto set = ParseCounters(c.text, "f.csv");
    ASSERT_FALSE(set.ok()) << c.text;
    EXPECT_EQ(set.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(set.error().message.find(c.want), std::string::npos)
        << c.text << " -> " << set.error().message;
  }
}

TEST(Counters, DcgmExporter1xNamesKeepTheirSpelling) {
  auto set = ParseCounters(
      "dcgm_sm_clock, gauge, SM\ndcgm_nvlink_bandwidth_total, counter, NVLink\n"
      "dcgm_fi_prof_dram_active, gauge, DRAM\nDCGM_FI_DEV_GPU_TEMP, gauge, temp\n",
      "1x.csv");
  ASSERT_TRUE(set.ok()) << set.error().message;
  ASSERT_EQ(set->counters.size(), 4u);
  EXPECT_EQ(set->counters[0].name, "dcgm_sm_clock");
  EXPECT_EQ(FieldAt(set->counters[0].field).id, 100);
  EXPECT_EQ(FieldAt(set->counters[1].field).id, 449);
  EXPECT_EQ(set->counters[2].name, "dcgm_fi_prof_dram_active");
  EXPECT_EQ(FieldAt(set->counters[2].field).id, 1005);
  EXPECT_EQ(set->counters[3].name, "DCGM_FI_DEV_GPU_TEMP");
  auto twice = ParseCounters("dcgm_sm_clock, gauge, a\nDCGM_FI_DEV_SM_CLOCK, gauge, b\n", "d.csv");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("listed twice"), std::string::npos);
  EXPECT_FALSE(ParseCounters("dcgm_no_such_thing, gauge, a\n", "d.csv").ok());
}

TEST(Counters, MissingFileIsNotFound) {
  auto set = LoadCounters("/nonexistent/counters.csv");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code, ErrorCode::kNotFound);
}

TEST(Counters, DefaultSetMirrorsDcgmExporterForReadableFieldsPlusTheAlertedErrors) {
  CounterSet set = DefaultCounters();
  std::vector<std::string> names;
  for (const Counter& c : set.counters) names.push_back(c.name);
  // dcgm-exporter's order; the ECC, retired-page and NVLink error fields are commented out in its
  // file and on here, because the shipped alerts select them (issue 40).
  const std::vector<std::string> want = {"DCGM_FI_DEV_SM_CLOCK",
                                         "DCGM_FI_DEV_MEM_CLOCK",
                                         "DCGM_FI_DEV_MEMORY_TEMP",
                                         "DCGM_FI_DEV_GPU_TEMP",
                                         "DCGM_FI_DEV_POWER_USAGE",
                                         "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                                         "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                                         "DCGM_FI_DEV_GPU_UTIL",
                                         "DCGM_FI_DEV_MEM_COPY_UTIL",
                                         "DCGM_FI_DEV_ENC_UTIL",
                                         "DCGM_FI_DEV_DEC_UTIL",
                                         "DCGM_FI_DEV_XID_ERRORS",
                                         "DCGM_FI_DEV_FB_FREE",
                                         "DCGM_FI_DEV_FB_USED",
                                         "DCGM_FI_DEV_FB_RESERVED",
                                         "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
                                         "DCGM_FI_DEV_RETIRED_SBE",
                                         "DCGM_FI_DEV_RETIRED_DBE",
                                         "DCGM_FI_DEV_RETIRED_PENDING",
                                         "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
                                         "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                                         "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                                         "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
                                         "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
                                         "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                                         "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
                                         "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                                         "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
                                         "DCGM_FI_PROF_DRAM_ACTIVE",
                                         "DCGM_FI_PROF_PCIE_TX_BYTES",
                                         "DCGM_FI_PROF_PCIE_RX_BYTES"};
  EXPECT_EQ(names, want);
  ASSERT_EQ(set.labels.size(), 1u);
  EXPECT_EQ(set.labels[0].name, "DCGM_FI_DRIVER_VERSION");
}

TEST(Counters, FormattedSetParsesBackToTheSameSet) {
  CounterSet set = DefaultCounters();
  auto back = ParseCounters(FormatCounters(set), "round-trip");
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->counters.size(), set.counters.size());
  for (std::size_t i = 0; i < set.counters.size(); ++i) {
    EXPECT_EQ(back->counters[i].name, set.counters[i].name);
    EXPECT_EQ(back->counters[i].type, set.counters[i].type);
    EXPECT_EQ(back->counters[i].help, set.counters[i].help);
  }
  EXPECT_EQ(back->labels.size(), 1u);
}

// Found by fuzzing (issue 13, tests/fuzz/regressions/counters): a help text with blanks at either
// end was written unquoted and read back trimmed.
TEST(Counters, AHelpWithBlanksAtItsEndsSurvivesTheRoundTrip) {
  CounterSet set = DefaultCounters();
  set.counters[0].help = "  padded help ";
  set.counters[1].help = "   ";
  auto back = ParseCounters(FormatCounters(set), "round-trip");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->counters[0].help, "  padded help ");
  EXPECT_EQ(back->counters[1].help, "   ");
}

TEST(Counters, ReadFieldsAlwaysIncludeTheXidField) {
  auto set = ParseCounters("DCGM_FI_DEV_GPU_UTIL, gauge, x\n", "f.csv");
  ASSERT_TRUE(set.ok());
  auto fields = set->ReadFields();
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(FieldAt(fields[1]).id, 230);
}

}  // namespace
}  // namespace gpulse::exporter
