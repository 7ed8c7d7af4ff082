// The GPM reader (src/gpu/nvml/nvml_gpm.h) over a scripted fake of NVML's GPM functions: the 100 ms
// floor, values scaled to DCGM's ratios, and each failure mode (no GPM, a failing call, values out
// of range, a metric the driver does not support, profiling stuck at 0 while busy).
#include <gtest/gtest.h>

#include <set>

#include "core/fields.h"
#include "gpu/nvml/nvml_abi.h"
#include "gpu/nvml/nvml_gpm.h"

namespace gpulse::nvml {
namespace {

// What the fake answers; reset by each test.
struct Script {
  unsigned supported = 1;
  nvmlReturn_t metrics_rc = NVML_SUCCESS;
  double value = 50.0;             // every metric's value
  double graphics = 50.0;          // NVML_GPM_METRIC_GRAPHICS_UTIL's value
  unsigned unsupported_metric = 0;  // this metric answers NOT_SUPPORTED
  int sample_gets = 0;
  int metrics_gets = 0;
  std::set<unsigned> asked;
};
Script g;

NvmlApi FakeApi() {
  NvmlApi a;
  a.GpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t* s) -> nvmlReturn_t {
    if (s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = g.supported;
    return NVML_SUCCESS;
  };
  a.GpmSampleAlloc = [](nvmlGpmSample_t* s) -> nvmlReturn_t {
    static std::uintptr_t next = 0x100;
    *s = reinterpret_cast<nvmlGpmSample_t>(next += 8);
    return NVML_SUCCESS;
  };
  a.GpmSampleFree = [](nvmlGpmSample_t) -> nvmlReturn_t { return NVML_SUCCESS; };
  a.GpmSampleGet = [](nvmlDevice_t, nvmlGpmSample_t) -> nvmlReturn_t {
    ++g.sample_gets;
    return NVML_SUCCESS;
  };
  a.GpmMigSampleGet = [](nvmlDevice_t, unsigned, nvmlGpmSample_t) -> nvmlReturn_t {
    ++g.sample_gets;
    return NVML_SUCCESS;
  };
  a.GpmMetricsGet = [](nvmlGpmMetricsGet_t* m) -> nvmlReturn_t {
    ++g.metrics_gets;
    if (m->version != NVML_GPM_METRICS_GET_VERSION || m->sample1 == m->sample2) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (g.metrics_rc != NVML_SUCCESS) return g.metrics_rc;
    for (unsigned i = 0; i < m->numMetrics; ++i) {
      nvmlGpmMetric_t& x = m->metrics[i];
      g.asked.insert(x.metricId);
      x.nvmlReturn = x.metricId == g.unsupported_metric ? NVML_ERROR_NOT_SUPPORTED : NVML_SUCCESS;
      x.value = x.metricId == NVML_GPM_METRIC_GRAPHICS_UTIL ? g.graphics : g.value;
    }
    return NVML_SUCCESS;
  };
  return a;
}

constexpr std::int64_t kSecond = 1'000'000'000;

class GpmReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = Script{};
    api_ = FakeApi();
  }
  FieldIndex F(FieldId id) { return *IndexOf(id); }
  Sample Fresh() {
    Sample s;
    s.values.assign(AllFields().size(), std::nullopt);
    s.unsupported.assign(AllFields().size(), false);
    return s;
  }
  NvmlApi api_;
  gpu::ReadStats stats_;
  nvmlDevice_t dev_ = reinterpret_cast<nvmlDevice_t>(std::uintptr_t{1});
};

TEST_F(GpmReaderTest, CatalogueMetricIdsAreNvmlsOwn) {
  auto gpm = [](FieldId id) { return FieldAt(*IndexOf(id)).gpm; };
  EXPECT_EQ(gpm(1001), NVML_GPM_METRIC_GRAPHICS_UTIL);
  EXPECT_EQ(gpm(1002), NVML_GPM_METRIC_SM_UTIL);
  EXPECT_EQ(gpm(1003), NVML_GPM_METRIC_SM_OCCUPANCY);
  EXPECT_EQ(gpm(1004), NVML_GPM_METRIC_ANY_TENSOR_UTIL);
  EXPECT_EQ(gpm(1005), NVML_GPM_METRIC_DRAM_BW_UTIL);
  EXPECT_EQ(gpm(1006), NVML_GPM_METRIC_FP64_UTIL);
  EXPECT_EQ(gpm(1007), NVML_GPM_METRIC_FP32_UTIL);
  EXPECT_EQ(gpm(1008), NVML_GPM_METRIC_FP16_UTIL);
  EXPECT_EQ(gpm(1009), NVML_GPM_METRIC_PCIE_TX_PER_SEC);
  EXPECT_EQ(gpm(1010), NVML_GPM_METRIC_PCIE_RX_PER_SEC);
  EXPECT_EQ(gpm(1011), NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC);
  EXPECT_EQ(gpm(1012), NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC);
  EXPECT_EQ(gpm(1013), NVML_GPM_METRIC_IMMA_TENSOR_UTIL);
  EXPECT_EQ(gpm(1014), NVML_GPM_METRIC_HMMA_TENSOR_UTIL);
  EXPECT_EQ(gpm(1015), NVML_GPM_METRIC_DFMA_TENSOR_UTIL);
  EXPECT_EQ(gpm(1016), NVML_GPM_METRIC_INTEGER_UTIL);
  EXPECT_EQ(gpm(1017), NVML_GPM_METRIC_NVDEC_0_UTIL);
  EXPECT_EQ(gpm(1025), NVML_GPM_METRIC_NVJPG_0_UTIL);
  EXPECT_EQ(gpm(1033), NVML_GPM_METRIC_NVOFA_0_UTIL);
  EXPECT_EQ(gpm(1040), NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 1);  // L0 TX
  EXPECT_EQ(gpm(1041), NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC);      // L0 RX
  EXPECT_EQ(gpm(1075), NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 34);  // L17 RX
  for (const FieldSpec& f : AllFields()) {
    if (f.nvml != NvmlSource::kGpm) continue;
    EXPECT_LT(f.gpm, NVML_GPM_METRIC_MAX) << f.name;
    // nvml.h: the *_UTIL metrics are percent, the *_PER_SEC metrics MiB/s.
    EXPECT_DOUBLE_EQ(f.scale, f.unit == Unit::kRatio ? 0.01 : 1048576.0) << f.name;
    EXPECT_EQ(f.per_instance, f.unit == Unit::kRatio) << f.name;
  }
}

TEST_F(GpmReaderTest, FirstReadPrimesThenValuesAreRatios) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1001), F(1004), F(1009)};
  Sample s = Fresh();
  r.Read(fields, kSecond, 90.0, s, stats_);
  EXPECT_FALSE(s.values[F(1001)]);
  EXPECT_FALSE(s.unsupported[F(1001)]);  // not yet, not never
  s = Fresh();
  r.Read(fields, 2 * kSecond, 90.0, s, stats_);
  EXPECT_DOUBLE_EQ(*s.values[F(1001)], 0.5);
  EXPECT_DOUBLE_EQ(*s.values[F(1004)], 0.5);
  EXPECT_DOUBLE_EQ(*s.values[F(1009)], 50.0 * 1048576);  // GPM's MiB/s in bytes per second
  EXPECT_EQ(g.sample_gets, 2);
  EXPECT_EQ(g.metrics_gets, 1);
}

TEST_F(GpmReaderTest, NeverSamplesFasterThanTheHardwareFloor) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1001)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  r.Read(fields, kSecond + kGpmMinIntervalNs, std::nullopt, s, stats_);
  ASSERT_EQ(g.sample_gets, 2);
  g.graphics = 70.0;
  s = Fresh();
  r.Read(fields, kSecond + kGpmMinIntervalNs + kGpmMinIntervalNs / 2, std::nullopt, s, stats_);
  EXPECT_EQ(g.sample_gets, 2) << "a read inside 100 ms takes no sample";
  EXPECT_DOUBLE_EQ(*s.values[F(1001)], 0.5) << "and answers the last values";
  r.Read(fields, kSecond + 2 * kGpmMinIntervalNs, std::nullopt, s, stats_);
  EXPECT_EQ(g.sample_gets, 3);
  EXPECT_DOUBLE_EQ(*s.values[F(1001)], 0.7);
}

TEST_F(GpmReaderTest, AGpuWithoutGpmHasTheFieldsUnsupportedWithTheReason) {
  g.supported = 0;
  GpmReader r(&api_, dev_, std::nullopt);
  EXPECT_FALSE(r.Supported());
  EXPECT_NE(r.unsupported_reason().find("GPM"), std::string::npos);
  Sample s = Fresh();
  r.Read(std::vector<FieldIndex>{F(1001)}, kSecond, 90.0, s, stats_);
  EXPECT_TRUE(s.unsupported[F(1001)]);
  EXPECT_EQ(g.sample_gets, 0);
}

TEST_F(GpmReaderTest, ALibraryWithoutGpmFunctionsSaysSo) {
  api_.GpmMetricsGet = nullptr;
  GpmReader r(&api_, dev_, std::nullopt);
  EXPECT_FALSE(r.Supported());
  EXPECT_NE(r.unsupported_reason().find("no GPM functions"), std::string::npos);
}

TEST_F(GpmReaderTest, AFailingCallIsAbsentAndCountedNeverZero) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1001)};
  Sample s = Fresh();
  r.Read(fields, kSecond, 90.0, s, stats_);
  r.Read(fields, 2 * kSecond, 90.0, s, stats_);
  ASSERT_TRUE(s.values[F(1001)]);
  g.metrics_rc = NVML_ERROR_UNKNOWN;
  s = Fresh();
  r.Read(fields, 3 * kSecond, 90.0, s, stats_);
  EXPECT_FALSE(s.values[F(1001)]);
  EXPECT_FALSE(s.unsupported[F(1001)]);
  EXPECT_EQ(stats_.profiling_failed_calls, 1u);
  EXPECT_EQ(stats_.failed_calls, 1u);
  g.metrics_rc = NVML_SUCCESS;  // it recovers on the next read
  r.Read(fields, 4 * kSecond, 90.0, s, stats_);
  EXPECT_DOUBLE_EQ(*s.values[F(1001)], 0.5);
}

TEST_F(GpmReaderTest, ValuesOutOfRangeAreDroppedAndCounted) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1002), F(1009)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  g.value = 250.0;  // a ratio of 2.5 is impossible; 250 MiB/s is fine
  r.Read(fields, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_FALSE(s.values[F(1002)]);
  EXPECT_DOUBLE_EQ(*s.values[F(1009)], 250.0 * 1048576);
  EXPECT_EQ(stats_.profiling_rejected_values, 1u);
  g.value = -1.0;  // a negative rate is impossible too
  s = Fresh();
  r.Read(fields, 3 * kSecond, std::nullopt, s, stats_);
  EXPECT_FALSE(s.values[F(1009)]);
  EXPECT_EQ(stats_.profiling_rejected_values, 3u);
}

TEST_F(GpmReaderTest, AMetricTheDriverDoesNotSupportIsUnsupportedAndNotAskedAgain) {
  g.unsupported_metric = NVML_GPM_METRIC_NVOFA_0_UTIL;
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1001), F(1033)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  r.Read(fields, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_TRUE(s.unsupported[F(1033)]);
  EXPECT_TRUE(s.values[F(1001)]);
  g.asked.clear();
  r.Read(fields, 3 * kSecond, std::nullopt, s, stats_);
  EXPECT_EQ(g.asked.count(NVML_GPM_METRIC_NVOFA_0_UTIL), 0u);
  EXPECT_TRUE(s.unsupported[F(1033)]);
}

TEST_F(GpmReaderTest, TheRequestIsPreparedOnceAndFollowsTheFields) {
  GpmReader r(&api_, dev_, std::nullopt);
  Sample s = Fresh();
  r.Read(std::vector<FieldIndex>{F(1001)}, kSecond, std::nullopt, s, stats_);
  r.Read(std::vector<FieldIndex>{F(1001)}, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_EQ(g.asked, (std::set<unsigned>{NVML_GPM_METRIC_GRAPHICS_UTIL}));
  g.asked.clear();
  s = Fresh();
  r.Read(std::vector<FieldIndex>{F(1004), F(1005)}, 3 * kSecond, std::nullopt, s, stats_);
  EXPECT_EQ(g.asked, (std::set<unsigned>{NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL,
                                         NVML_GPM_METRIC_DRAM_BW_UTIL}));
  EXPECT_TRUE(s.values[F(1004)]);
  EXPECT_FALSE(s.values[F(1001)]) << "a field no longer asked for is not reported";
}

TEST_F(GpmReaderTest, ZeroWhileBusyForSeveralReadsIsStuck) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1004)};  // the graphics metric is asked for regardless
  g.graphics = 0.0;
  Sample s = Fresh();
  std::int64_t t = kSecond;
  r.Read(fields, t, 95.0, s, stats_);
  for (int i = 0; i < kStuckReads - 1; ++i) {
    r.Read(fields, t += kSecond, 95.0, s, stats_);
    EXPECT_FALSE(r.stuck()) << i;
  }
  r.Read(fields, t += kSecond, 95.0, s, stats_);
  EXPECT_TRUE(r.stuck());
  EXPECT_TRUE(g.asked.count(NVML_GPM_METRIC_GRAPHICS_UTIL));
  r.Read(fields, t += kSecond, 10.0, s, stats_);  // an idle GPU reading 0 is not stuck
  EXPECT_FALSE(r.stuck());
  for (int i = 0; i < kStuckReads; ++i) r.Read(fields, t += kSecond, 95.0, s, stats_);
  ASSERT_TRUE(r.stuck());
  r.Read(fields, t += kSecond, std::nullopt, s, stats_);
  EXPECT_FALSE(r.stuck()) << "no utilization to compare: no verdict, not the old one";
}

TEST_F(GpmReaderTest, ATransientSupportFailureIsAskedAgain) {
  static int calls;
  calls = 0;
  api_.GpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t* s) -> nvmlReturn_t {
    if (++calls == 1) return NVML_ERROR_UNKNOWN;
    s->isSupportedDevice = 1;
    return NVML_SUCCESS;
  };
  GpmReader r(&api_, dev_, std::nullopt);
  Sample s = Fresh();
  r.Read(std::vector<FieldIndex>{F(1001)}, kSecond, std::nullopt, s, stats_);
  EXPECT_FALSE(s.values[F(1001)]);
  EXPECT_FALSE(s.unsupported[F(1001)]) << "a failed query is a failure, not a verdict";
  EXPECT_EQ(stats_.profiling_failed_calls, 1u);
  EXPECT_TRUE(r.Supported()) << "asked again";
  EXPECT_TRUE(r.unsupported_reason().empty());
  api_.GpmQueryDeviceSupport = [](nvmlDevice_t, nvmlGpmSupport_t*) -> nvmlReturn_t {
    return NVML_ERROR_NOT_SUPPORTED;
  };
  GpmReader never(&api_, dev_, std::nullopt);
  EXPECT_FALSE(never.Supported());
  api_.GpmQueryDeviceSupport = FakeApi().GpmQueryDeviceSupport;
  EXPECT_FALSE(never.Supported()) << "NOT_SUPPORTED is a lasting answer";
}

TEST_F(GpmReaderTest, AMigInstanceHasNoGpuLevelRates) {
  GpmReader r(&api_, dev_, 3u);
  std::vector<FieldIndex> fields = {F(1001), F(1009), F(1011)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  r.Read(fields, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_TRUE(s.values[F(1001)]);
  EXPECT_TRUE(s.unsupported[F(1009)]);
  EXPECT_TRUE(s.unsupported[F(1011)]);
  EXPECT_EQ(g.asked.count(NVML_GPM_METRIC_PCIE_TX_PER_SEC), 0u) << "not asked of an instance";
}

TEST_F(GpmReaderTest, AGpuLostDuringASampleIsReported) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1001)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  api_.GpmSampleGet = [](nvmlDevice_t, nvmlGpmSample_t) -> nvmlReturn_t { return NVML_ERROR_GPU_IS_LOST; };
  r.Read(fields, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_TRUE(r.lost());
  EXPECT_EQ(stats_.profiling_failed_calls, 0u) << "a loss, not a failure";
}

TEST_F(GpmReaderTest, ARatioAHairOver100IsClampedAndFarOverIsDropped) {
  GpmReader r(&api_, dev_, std::nullopt);
  std::vector<FieldIndex> fields = {F(1002)};
  Sample s = Fresh();
  r.Read(fields, kSecond, std::nullopt, s, stats_);
  g.value = 100.4;
  r.Read(fields, 2 * kSecond, std::nullopt, s, stats_);
  EXPECT_DOUBLE_EQ(*s.values[F(1002)], 1.0);
  g.value = 102.0;
  s = Fresh();
  r.Read(fields, 3 * kSecond, std::nullopt, s, stats_);
  EXPECT_FALSE(s.values[F(1002)]);
}

TEST_F(GpmReaderTest, AMigInstanceSamplesThroughItsParent) {
  unsigned seen = 0;
  static unsigned* seen_ptr;
  seen_ptr = &seen;
  api_.GpmMigSampleGet = [](nvmlDevice_t, unsigned gi, nvmlGpmSample_t) -> nvmlReturn_t {
    *seen_ptr = gi;
    return NVML_SUCCESS;
  };
  GpmReader r(&api_, dev_, 7u);
  Sample s = Fresh();
  r.Read(std::vector<FieldIndex>{F(1001)}, kSecond, std::nullopt, s, stats_);
  EXPECT_EQ(seen, 7u);
  EXPECT_EQ(g.sample_gets, 0) << "not the GPU-level sample call";
}

}  // namespace
}  // namespace gpulse::nvml
