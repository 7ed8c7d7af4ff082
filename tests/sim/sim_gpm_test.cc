// The profiling readings: GPM support, samples and metrics (exact values with the frozen clock,
// every error return, every gpm fault mode, MIG instances), PCIe throughput, fan speed, violation
// timers and NVLink (link state, counters, the traffic counters against the rate), on the
// `profiling-faults` and `mig-h100` built-ins and small scenario files.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_library.h"

namespace gpulse::sim::testing {
namespace {

constexpr double kMiB = 1048576.0;  // GPM rates are in MiB/s


// profiling-faults' constant load (devices 0-2): the exact inputs of every metric below.
constexpr double kUtil = 90, kTensor = 60, kDram = 45;
constexpr double kPcieTxMbS = 500, kPcieRxMbS = 2000, kNvlinkMbS = 36000;
constexpr unsigned kLinks = 18;

class SimGpmTest : public SimTest {
 protected:
  nvmlGpmSample_t NewSample() {
    nvmlGpmSample_t s = nullptr;
    EXPECT_EQ(api.GpmSampleAlloc(&s), NVML_SUCCESS);
    return s;
  }
  // Two fresh samples of GPU `d`, taken at t0 and t1 (the clock is left at t1).
  std::pair<nvmlGpmSample_t, nvmlGpmSample_t> SamplePair(nvmlDevice_t d, double t0, double t1) {
    nvmlGpmSample_t a = NewSample(), b = NewSample();
    At(t0);
    EXPECT_EQ(api.GpmSampleGet(d, a), NVML_SUCCESS) << "t0 " << t0;
    At(t1);
    EXPECT_EQ(api.GpmSampleGet(d, b), NVML_SUCCESS) << "t1 " << t1;
    return {a, b};
  }
  // The same through nvmlGpmMigSampleGet for GPU instance `gi` of `parent`.
  std::pair<nvmlGpmSample_t, nvmlGpmSample_t> MigSamplePair(nvmlDevice_t parent, unsigned gi,
                                                            double t0, double t1) {
    nvmlGpmSample_t a = NewSample(), b = NewSample();
    At(t0);
    EXPECT_EQ(api.GpmMigSampleGet(parent, gi, a), NVML_SUCCESS) << "t0 " << t0;
    At(t1);
    EXPECT_EQ(api.GpmMigSampleGet(parent, gi, b), NVML_SUCCESS) << "t1 " << t1;
    return {a, b};
  }
  // nvmlGpmMetricsGet over (a, b) asking for `ids`; the call's result, and the entries in `out`.
  nvmlReturn_t Get(nvmlGpmSample_t a, nvmlGpmSample_t b, const std::vector<unsigned>& ids,
                   std::vector<nvmlGpmMetric_t>* out = nullptr) {
    auto get = std::make_unique<nvmlGpmMetricsGet_t>();  // zeroed
    get->version = NVML_GPM_METRICS_GET_VERSION;
    get->numMetrics = static_cast<unsigned>(ids.size());
    get->sample1 = a;
    get->sample2 = b;
    for (size_t i = 0; i < ids.size(); ++i) get->metrics[i].metricId = ids[i];
    const nvmlReturn_t r = api.GpmMetricsGet(get.get());
    if (out != nullptr) out->assign(get->metrics, get->metrics + ids.size());
    return r;
  }
  // Every entry of `ids` from samples (a, b); expects the call to succeed.
  std::vector<nvmlGpmMetric_t> Entries(std::pair<nvmlGpmSample_t, nvmlGpmSample_t> samples,
                                       const std::vector<unsigned>& ids) {
    std::vector<nvmlGpmMetric_t> out;
    EXPECT_EQ(Get(samples.first, samples.second, ids, &out), NVML_SUCCESS);
    EXPECT_EQ(api.GpmSampleFree(samples.first), NVML_SUCCESS);
    EXPECT_EQ(api.GpmSampleFree(samples.second), NVML_SUCCESS);
    return out;
  }
  // Metric `id` of GPU `d` from samples at t − 1 (at least 0) and t; expects it to succeed.
  double Metric(nvmlDevice_t d, unsigned id, double t) {
    const nvmlGpmMetric_t m = Entries(SamplePair(d, std::max(0.0, t - 1), t), {id})[0];
    EXPECT_EQ(m.nvmlReturn, NVML_SUCCESS) << "metric " << id << " at " << t;
    return m.value;
  }
  nvmlReturn_t MetricReturn(nvmlDevice_t d, unsigned id, double t) {
    return Entries(SamplePair(d, std::max(0.0, t - 1), t), {id})[0].nvmlReturn;
  }
  // One field entry with a scope (a link for fields 138/139).
  nvmlFieldValue_t FieldEntry(nvmlDevice_t d, unsigned id, unsigned scope = 0) {
    nvmlFieldValue_t v{};
    v.fieldId = id;
    v.scopeId = scope;
    EXPECT_EQ(api.FieldValues(d, 1, &v), NVML_SUCCESS);
    return v;
  }
  unsigned long long ViolationNs(nvmlDevice_t d, int policy) {
    nvmlViolationTime_t v{};
    EXPECT_EQ(api.ViolationStatus(d, policy, &v), NVML_SUCCESS) << "policy " << policy;
    return v.violationTime;
  }
  nvmlDevice_t MigDevice(nvmlDevice_t parent, unsigned slot) {
    nvmlDevice_t mig = nullptr;
    EXPECT_EQ(api.MigHandle(parent, slot, &mig), NVML_SUCCESS) << "slot " << slot;
    return mig;
  }
  void Reload(const std::string& scenario) {
    ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
    Load(scenario);
  }
};

// ---------------------------------------------------------------------------------------------
// nvmlGpmQueryDeviceSupport

TEST_F(SimGpmTest, SupportFollowsTheGpmKeyAndItsNameBasedDefault) {
  Load("profiling-faults");
  nvmlGpmSupport_t s{};
  s.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(api.GpmQueryDeviceSupport(Device(0), &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 1u) << "H100: GPM by default";
  ASSERT_EQ(api.GpmQueryDeviceSupport(Device(1), &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 0u) << "gpm: false";

  Reload("4xA40-tp2");
  s.isSupportedDevice = 9;
  ASSERT_EQ(api.GpmQueryDeviceSupport(Device(0), &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 0u) << "Ampere: no GPM";

  TempScenario file("named.yaml", R"(
devices:
  - {name: "NVIDIA GH200 480GB", memory_total_mib: 1024, power_limit_w: 900}
  - {name: "NVIDIA B200", memory_total_mib: 1024, power_limit_w: 1000}
  - {name: "NVIDIA H20", memory_total_mib: 1024, power_limit_w: 400}
  - {name: "NVIDIA L40S", memory_total_mib: 1024, power_limit_w: 350}
  - {name: "NVIDIA L40S", memory_total_mib: 1024, power_limit_w: 350, gpm: true}
  - {name: "NVIDIA H100 PCIe", memory_total_mib: 1024, power_limit_w: 350, gpm: false}
)");
  Reload(file.path());
  const unsigned expected[] = {1, 1, 1, 0, 1, 0};
  for (unsigned i = 0; i < 6; ++i) {
    ASSERT_EQ(api.GpmQueryDeviceSupport(Device(i), &s), NVML_SUCCESS);
    EXPECT_EQ(s.isSupportedDevice, expected[i]) << "device " << i;
  }
}

TEST_F(SimGpmTest, SupportChecksItsArgumentsAndAMigHandleAnswersAsItsParent) {
  Load("mig-h100");
  nvmlDevice_t d = Device(0);
  EXPECT_EQ(api.GpmQueryDeviceSupport(d, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpmSupport_t s{};
  s.version = 2;
  EXPECT_EQ(api.GpmQueryDeviceSupport(d, &s), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  s.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(api.GpmQueryDeviceSupport(MigDevice(d, 1), &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 1u);

  Reload("mig-a100");
  ASSERT_EQ(api.GpmQueryDeviceSupport(MigDevice(Device(0), 0), &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 0u) << "A100 instance: its parent has no GPM";
}

// ---------------------------------------------------------------------------------------------
// Samples

TEST_F(SimGpmTest, SamplesAreOwnedByTheSession) {
  nvmlGpmSample_t s = nullptr;
  EXPECT_EQ(api.GpmSampleAlloc(&s), NVML_ERROR_UNINITIALIZED);
  Load("profiling-faults");
  EXPECT_EQ(api.GpmSampleAlloc(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(api.GpmSampleAlloc(&s), NVML_SUCCESS);
  ASSERT_NE(s, nullptr);
  nvmlGpmSample_t other = NewSample();
  EXPECT_NE(other, s);
  EXPECT_EQ(api.GpmSampleFree(s), NVML_SUCCESS);
  EXPECT_EQ(api.GpmSampleFree(s), NVML_ERROR_INVALID_ARGUMENT) << "freed twice";
  int bogus = 0;
  EXPECT_EQ(api.GpmSampleFree(reinterpret_cast<nvmlGpmSample_t>(&bogus)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmSampleFree(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  // `other` is freed with the session; after the last shutdown it is not a sample any more.
  ASSERT_EQ(api.Shutdown(), NVML_SUCCESS);
  EXPECT_EQ(api.GpmSampleFree(other), NVML_ERROR_UNINITIALIZED);
  Load("profiling-faults");
  EXPECT_EQ(api.GpmSampleFree(other), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmSampleGet(Device(0), other), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimGpmTest, ALeakingCallerRunsOutOfSamples) {
  Load("profiling-faults");
  std::vector<nvmlGpmSample_t> samples(4096);
  for (auto& s : samples) ASSERT_EQ(api.GpmSampleAlloc(&s), NVML_SUCCESS);
  nvmlGpmSample_t s = nullptr;
  EXPECT_EQ(api.GpmSampleAlloc(&s), NVML_ERROR_MEMORY);
  ASSERT_EQ(api.GpmSampleFree(samples.back()), NVML_SUCCESS);
  EXPECT_EQ(api.GpmSampleAlloc(&s), NVML_SUCCESS);
}

TEST_F(SimGpmTest, SampleGetErrors) {
  Load("profiling-faults");
  nvmlGpmSample_t s = NewSample();
  int bogus = 0;
  EXPECT_EQ(api.GpmSampleGet(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmSampleGet(Device(0), reinterpret_cast<nvmlGpmSample_t>(&bogus)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmSampleGet(nullptr, s), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmSampleGet(Device(1), s), NVML_ERROR_NOT_SUPPORTED) << "gpm: false";
  EXPECT_EQ(api.GpmSampleGet(Device(0), s), NVML_SUCCESS);

  Reload("mig-h100");
  s = NewSample();
  nvmlDevice_t mig = MigDevice(Device(0), 0);
  EXPECT_EQ(api.GpmSampleGet(mig, s), NVML_ERROR_INVALID_ARGUMENT)
      << "instances are sampled through their parent";
  EXPECT_EQ(api.GpmSampleGet(Device(0), s), NVML_SUCCESS) << "the MIG-enabled parent itself";

  Reload("faults");  // H100s; GPU 3 is lost at 1.5 s
  s = NewSample();
  At(1.49);
  EXPECT_EQ(api.GpmSampleGet(Device(3), s), NVML_SUCCESS);
  nvmlDevice_t lost = Device(3);
  At(1.5);
  EXPECT_EQ(api.GpmSampleGet(lost, s), NVML_ERROR_GPU_IS_LOST);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  EXPECT_EQ(api.GpmQueryDeviceSupport(lost, &support), NVML_ERROR_GPU_IS_LOST);
}

TEST_F(SimGpmTest, TheGpmCallNameGatesSampling) {
  TempScenario file("gated.yaml", R"(
devices:
  - {name: "NVIDIA H100 PCIe", memory_total_mib: 1024, power_limit_w: 350}
  - {name: "NVIDIA H100 PCIe", memory_total_mib: 1024, power_limit_w: 350, unsupported: [gpm]}
faults:
  - {at: 1.0, until: 2.0, device: 0, kind: not_supported, calls: [gpm]}
)");
  Load(file.path());
  nvmlGpmSample_t s = NewSample();
  for (auto [t, expected] :
       {std::pair{0.99, NVML_SUCCESS}, std::pair{1.0, NVML_ERROR_NOT_SUPPORTED},
        std::pair{1.99, NVML_ERROR_NOT_SUPPORTED}, std::pair{2.0, NVML_SUCCESS}}) {
    At(t);
    EXPECT_EQ(api.GpmSampleGet(Device(0), s), expected) << t;
  }
  EXPECT_EQ(api.GpmSampleGet(Device(1), s), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  ASSERT_EQ(api.GpmQueryDeviceSupport(Device(1), &support), NVML_SUCCESS);
  EXPECT_EQ(support.isSupportedDevice, 1u) << "the support query reports the gpm key only";
}

TEST_F(SimGpmTest, MigSampleGetErrors) {
  Load("mig-h100");
  nvmlDevice_t parent = Device(0);
  nvmlGpmSample_t s = NewSample();
  int bogus = 0;
  EXPECT_EQ(api.GpmMigSampleGet(parent, 2, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmMigSampleGet(parent, 2, reinterpret_cast<nvmlGpmSample_t>(&bogus)),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.GpmMigSampleGet(MigDevice(parent, 0), 2, s), NVML_ERROR_INVALID_ARGUMENT)
      << "the parent must be a GPU handle";
  EXPECT_EQ(api.GpmMigSampleGet(parent, 4, s), NVML_ERROR_NOT_FOUND) << "no GPU instance 4";
  EXPECT_EQ(api.GpmMigSampleGet(parent, 9, s), NVML_SUCCESS);

  Reload("profiling-faults");
  s = NewSample();
  EXPECT_EQ(api.GpmMigSampleGet(Device(0), 0, s), NVML_ERROR_INVALID_ARGUMENT) << "MIG disabled";
}

// ---------------------------------------------------------------------------------------------
// nvmlGpmMetricsGet: arguments

TEST_F(SimGpmTest, MetricsGetChecksItsArguments) {
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  EXPECT_EQ(api.GpmMetricsGet(get.get()), NVML_ERROR_UNINITIALIZED);
  Load("profiling-faults");
  EXPECT_EQ(api.GpmMetricsGet(nullptr), NVML_ERROR_INVALID_ARGUMENT);

  auto [a, b] = SamplePair(Device(0), 1, 2);
  get->sample1 = a;
  get->sample2 = b;
  get->numMetrics = 1;
  get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  get->version = 2;
  EXPECT_EQ(api.GpmMetricsGet(get.get()), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = NVML_GPM_METRIC_MAX + 1;
  EXPECT_EQ(api.GpmMetricsGet(get.get()), NVML_ERROR_INVALID_ARGUMENT);
  get->numMetrics = NVML_GPM_METRIC_MAX;
  EXPECT_EQ(api.GpmMetricsGet(get.get()), NVML_SUCCESS) << "every slot of the array";
  get->numMetrics = 0;
  EXPECT_EQ(api.GpmMetricsGet(get.get()), NVML_SUCCESS);

  nvmlGpmSample_t empty = NewSample();
  EXPECT_EQ(Get(a, empty, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT) << "not filled";
  EXPECT_EQ(Get(empty, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT);
  int bogus = 0;
  EXPECT_EQ(Get(a, reinterpret_cast<nvmlGpmSample_t>(&bogus), {NVML_GPM_METRIC_SM_UTIL}),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Get(nullptr, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Get(b, a, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT)
      << "sample2 earlier than sample1";
  EXPECT_EQ(Get(b, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_SUCCESS) << "equal times are allowed";

  auto [c, d] = SamplePair(Device(3), 1, 2);
  EXPECT_EQ(Get(a, d, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT)
      << "samples of two GPUs";
  EXPECT_EQ(Get(c, d, {NVML_GPM_METRIC_SM_UTIL}), NVML_SUCCESS);
  ASSERT_EQ(api.GpmSampleFree(a), NVML_SUCCESS);
  EXPECT_EQ(Get(a, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT) << "freed";
}

TEST_F(SimGpmTest, GpuAndInstanceSamplesDoNotMix) {
  Load("mig-h100");
  nvmlDevice_t parent = Device(0);
  nvmlGpmSample_t gpu = NewSample(), inst2 = NewSample(), inst3 = NewSample();
  At(1);
  ASSERT_EQ(api.GpmSampleGet(parent, gpu), NVML_SUCCESS);
  ASSERT_EQ(api.GpmMigSampleGet(parent, 2, inst2), NVML_SUCCESS);
  ASSERT_EQ(api.GpmMigSampleGet(parent, 3, inst3), NVML_SUCCESS);
  EXPECT_EQ(Get(gpu, inst2, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Get(inst2, inst3, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Get(inst2, inst2, {NVML_GPM_METRIC_SM_UTIL}), NVML_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// nvmlGpmMetricsGet: values

TEST_F(SimGpmTest, FrozenClockGivesTheExactValuesOfEveryMetric) {
  Load("profiling-faults");
  const double per_link = kNvlinkMbS * 1e6 / kMiB / kLinks;
  const std::vector<std::pair<unsigned, double>> expected = {
      {NVML_GPM_METRIC_GRAPHICS_UTIL, kUtil},
      {NVML_GPM_METRIC_SM_UTIL, kUtil * 0.9},
      {NVML_GPM_METRIC_SM_OCCUPANCY, kUtil * 0.45},
      {NVML_GPM_METRIC_INTEGER_UTIL, kUtil * 0.1},
      {NVML_GPM_METRIC_ANY_TENSOR_UTIL, kTensor},
      {NVML_GPM_METRIC_DFMA_TENSOR_UTIL, kTensor * 0.05},
      {NVML_GPM_METRIC_HMMA_TENSOR_UTIL, kTensor * 0.8},
      {NVML_GPM_METRIC_IMMA_TENSOR_UTIL, kTensor * 0.15},
      {NVML_GPM_METRIC_DRAM_BW_UTIL, kDram},
      {NVML_GPM_METRIC_FP64_UTIL, kUtil * 0.05},
      {NVML_GPM_METRIC_FP32_UTIL, kUtil * 0.3},
      {NVML_GPM_METRIC_FP16_UTIL, kUtil * 0.2},
      {NVML_GPM_METRIC_PCIE_TX_PER_SEC, kPcieTxMbS * 1e6 / kMiB},
      {NVML_GPM_METRIC_PCIE_RX_PER_SEC, kPcieRxMbS * 1e6 / kMiB},
      {NVML_GPM_METRIC_NVDEC_0_UTIL, 0},
      {NVML_GPM_METRIC_NVDEC_0_UTIL + 6, 0},
      {NVML_GPM_METRIC_NVJPG_0_UTIL, 0},
      {NVML_GPM_METRIC_NVJPG_0_UTIL + 6, 0},
      {NVML_GPM_METRIC_NVOFA_0_UTIL, 0},
      {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, kNvlinkMbS * 1e6 / kMiB},
      {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, kNvlinkMbS * 1e6 / kMiB},
      {NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC, per_link},
      {NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 1, per_link},       // L0 TX
      {NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 17, per_link},  // L17 RX
      {NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 17 + 1, per_link},
  };
  std::vector<unsigned> ids;
  for (const auto& [id, value] : expected) ids.push_back(id);
  for (double t : {0.0, 0.25, 3.0}) {  // device 0 has no gpm fault
    SCOPED_TRACE(t);
    const auto entries = Entries(SamplePair(Device(0), 0, t), ids);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(entries[i].nvmlReturn, NVML_SUCCESS) << expected[i].first;
      EXPECT_DOUBLE_EQ(entries[i].value, expected[i].second) << expected[i].first;
    }
  }
  EXPECT_DOUBLE_EQ(per_link * kMiB, 2e9);
}

TEST_F(SimGpmTest, MetricInfoNamesTheMetricWithStaticStrings) {
  Load("profiling-faults");
  const auto entries = Entries(SamplePair(Device(0), 0, 1),
                               {NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_PCIE_RX_PER_SEC,
                                NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 7, 8});
  EXPECT_STREQ(entries[0].metricInfo.shortName, "SM_UTIL");
  EXPECT_STREQ(entries[0].metricInfo.unit, "%");
  ASSERT_NE(entries[0].metricInfo.longName, nullptr);
  EXPECT_STRNE(entries[0].metricInfo.longName, "");
  EXPECT_STREQ(entries[1].metricInfo.shortName, "PCIE_RX_PER_SEC");
  EXPECT_STREQ(entries[1].metricInfo.unit, "MiB/s");
  EXPECT_STREQ(entries[2].metricInfo.shortName, "NVLINK_L3_TX_PER_SEC");
  EXPECT_EQ(entries[3].metricInfo.shortName, nullptr) << "8 is no metric";
  // The same pointers every time: the strings are the simulator's, not per call.
  const auto again = Entries(SamplePair(Device(0), 1, 2), {NVML_GPM_METRIC_SM_UTIL});
  EXPECT_EQ(again[0].metricInfo.shortName, entries[0].metricInfo.shortName);
}

TEST_F(SimGpmTest, UnknownIdsAndMissingEnginesAreNotSupportedInTheirEntry) {
  Load("profiling-faults");
  const auto entries =
      Entries(SamplePair(Device(0), 0, 1),
              {0, 8, 14, 51, 59, NVML_GPM_METRIC_MAX, NVML_GPM_METRIC_NVDEC_0_UTIL + 7,
               NVML_GPM_METRIC_NVJPG_0_UTIL + 7, NVML_GPM_METRIC_SM_UTIL, 5000});
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].metricId == NVML_GPM_METRIC_SM_UTIL) {
      EXPECT_EQ(entries[i].nvmlReturn, NVML_SUCCESS) << "its neighbours do not spoil it";
      continue;
    }
    EXPECT_EQ(entries[i].nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << entries[i].metricId;
  }
}

TEST_F(SimGpmTest, ValuesFollowTheKeyframesAtTheLaterSample) {
  TempScenario file("ramp.yaml", R"(
devices:
  - name: "NVIDIA H100 PCIe"
    memory_total_mib: 1024
    power_limit_w: 350
    nvlink_links: 4
    load:
      repeat_s: 20
      keyframes:
        - {t: 0, util: 50, mem_util: 20, sm_active: 10, tensor: 0, fp32: 40, nvlink_tx_mb_s: 800}
        - {t: 10, util: 70, sm_active: 30, tensor: 50, fp32: 40, nvlink_tx_mb_s: 1600}
  - {name: "NVIDIA H100 PCIe", memory_total_mib: 1024, power_limit_w: 350,
     load: [{t: 0, util: 50}]}
)");
  Load(file.path());
  nvmlDevice_t d = Device(0);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_SM_UTIL, 5), 20) << "interpolated";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_SM_UTIL, 15), 30) << "held after the last";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_SM_UTIL, 25), 20) << "looped";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_HMMA_TENSOR_UTIL, 5), 25 * 0.8);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_FP32_UTIL, 5), 40) << "its own keyframes win";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_FP16_UTIL, 5), 60 * 0.2) << "default 0.2 x util";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_SM_OCCUPANCY, 5), 60 * 0.45);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_DRAM_BW_UTIL, 5), 20) << "default mem_util";
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_PCIE_TX_PER_SEC, 5), 2 * 60 * 1e6 / kMiB);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_PCIE_RX_PER_SEC, 5), 4 * 60 * 1e6 / kMiB);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 5), 1200e6 / kMiB);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, 5), 500 * 60 * 1e6 / kMiB);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 3 + 1, 5), 300e6 / kMiB);
  EXPECT_EQ(MetricReturn(d, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 2 * 4, 5),
            NVML_ERROR_NOT_SUPPORTED)
      << "link 4 of 4";

  // The interval does not matter: only the later sample's t does.
  const auto wide = Entries(SamplePair(d, 0, 5), {NVML_GPM_METRIC_SM_UTIL});
  const auto narrow = Entries(SamplePair(d, 4.999, 5), {NVML_GPM_METRIC_SM_UTIL});
  EXPECT_EQ(wide[0].value, narrow[0].value);

  nvmlDevice_t no_links = Device(1);
  EXPECT_DOUBLE_EQ(Metric(no_links, NVML_GPM_METRIC_SM_UTIL, 1), 45);
  for (unsigned id :
       {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC + 0u, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC + 0u,
        NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 0u}) {
    EXPECT_EQ(MetricReturn(no_links, id, 1), NVML_ERROR_NOT_SUPPORTED) << id;
  }
}

// ---------------------------------------------------------------------------------------------
// gpm faults

TEST_F(SimGpmTest, FailModeFailsMetricsFromItsTimeButNotSampling) {
  Load("profiling-faults");
  nvmlDevice_t d = Device(2);  // mode: fail from 1.0
  auto [a, b] = SamplePair(d, 0.5, 0.99);
  EXPECT_EQ(Get(a, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_SUCCESS);
  nvmlGpmSample_t c = NewSample();
  At(1.0);
  ASSERT_EQ(api.GpmSampleGet(d, c), NVML_SUCCESS) << "sampling still works";
  EXPECT_EQ(Get(a, c, {NVML_GPM_METRIC_SM_UTIL}), NVML_ERROR_UNKNOWN) << "decided at sample2's t";
  EXPECT_EQ(Get(a, b, {NVML_GPM_METRIC_SM_UTIL}), NVML_SUCCESS)
      << "older samples still compute, whatever the clock says now";
  EXPECT_DOUBLE_EQ(Metric(Device(0), NVML_GPM_METRIC_SM_UTIL, 5), kUtil * 0.9)
      << "other GPUs unaffected";
}

TEST_F(SimGpmTest, ZeroModeReportsZeroWhileTheGpuIsBusy) {
  Load("profiling-faults");
  nvmlDevice_t d = Device(3);  // mode: zero from 0, util 95
  EXPECT_EQ(Util(d), 95u) << "utilization still shows the load";
  const auto entries =
      Entries(SamplePair(d, 0, 2),
              {NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL,
               NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL,
               NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
               NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 35, NVML_GPM_METRIC_NVDEC_0_UTIL + 7, 8});
  for (size_t i = 0; i + 2 < entries.size(); ++i) {
    EXPECT_EQ(entries[i].nvmlReturn, NVML_SUCCESS) << entries[i].metricId;
    EXPECT_EQ(entries[i].value, 0.0) << entries[i].metricId;
  }
  EXPECT_EQ(entries[entries.size() - 2].nvmlReturn, NVML_ERROR_NOT_SUPPORTED)
      << "an engine the GPU lacks stays unsupported";
  EXPECT_EQ(entries.back().nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << "an unknown id too";
}

TEST_F(SimGpmTest, OutOfRangeModeAndUntilAndTheFirstListedFaultWins) {
  TempScenario file("gpm-faults.yaml", R"(
devices:
  - {name: "NVIDIA H100 PCIe", memory_total_mib: 1024, power_limit_w: 350, nvlink_links: 2,
     load: [{t: 0, util: 40, mem_util: 20}]}
faults:
  - {at: 1, until: 2, device: 0, kind: gpm, mode: out_of_range}
  - {at: 3, device: 0, kind: gpm, mode: zero}
  - {at: 3, device: 0, kind: gpm, mode: fail}
)");
  Load(file.path());
  nvmlDevice_t d = Device(0);
  const std::vector<unsigned> ids = {
      NVML_GPM_METRIC_GRAPHICS_UTIL,   NVML_GPM_METRIC_FP64_UTIL,
      NVML_GPM_METRIC_PCIE_RX_PER_SEC, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 3,
      NVML_GPM_METRIC_NVOFA_0_UTIL,    NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 4};
  auto check = [&](double t0, double t1, const std::vector<double>& values) {
    SCOPED_TRACE(t1);
    const auto entries = Entries(SamplePair(d, t0, t1), ids);
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      EXPECT_EQ(entries[i].nvmlReturn, NVML_SUCCESS) << ids[i];
      EXPECT_DOUBLE_EQ(entries[i].value, values[i]) << ids[i];
    }
    EXPECT_EQ(entries.back().nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << "link 2 of 2";
  };
  check(0, 0.99, {40, 40 * 0.05, 160e6 / kMiB, 20000e6 / 2 / kMiB, 0});
  check(0.5, 1.0, {250, 250, -1, -1, 250});
  check(0.5, 1.99, {250, 250, -1, -1, 250});
  check(1.5, 2.0, {40, 40 * 0.05, 160e6 / kMiB, 20000e6 / 2 / kMiB, 0});
  check(2.0, 3.0, {0, 0, 0, 0, 0});  // zero, listed before fail
}

TEST_F(SimGpmTest, GpmFaultOnAMigParentAppliesToItsInstances) {
  TempScenario file("mig-fault.yaml", R"(
devices:
  - name: "NVIDIA H100 80GB HBM3"
    memory_total_mib: 81559
    power_limit_w: 700
    mig:
      enabled: true
      instances:
        - {profile: 3g.40gb, gpu_instance_id: 2, memory_mib: 40192, util: 30}
        - {profile: 3g.40gb, gpu_instance_id: 1, memory_mib: 40192}
    load: [{t: 0, util: 64, mem_util: 33, dec_util: 12}]
faults:
  - {at: 5, device: 0, kind: gpm, mode: zero}
)");
  Load(file.path());
  nvmlDevice_t parent = Device(0);
  auto metric = [&](unsigned gi, unsigned id, double t) {
    const auto e = Entries(MigSamplePair(parent, gi, t - 1, t), {id})[0];
    EXPECT_EQ(e.nvmlReturn, NVML_SUCCESS);
    return e.value;
  };
  EXPECT_DOUBLE_EQ(metric(2, NVML_GPM_METRIC_GRAPHICS_UTIL, 1), 30);
  EXPECT_DOUBLE_EQ(metric(1, NVML_GPM_METRIC_GRAPHICS_UTIL, 1), 64) << "no util: the parent's";
  EXPECT_DOUBLE_EQ(metric(1, NVML_GPM_METRIC_SM_UTIL, 1), 64 * 0.9);
  EXPECT_DOUBLE_EQ(metric(2, NVML_GPM_METRIC_DRAM_BW_UTIL, 1), 33) << "the parent's mem_util";
  EXPECT_DOUBLE_EQ(metric(2, NVML_GPM_METRIC_NVDEC_0_UTIL, 1), 12) << "the parent's decoders";
  EXPECT_DOUBLE_EQ(metric(2, NVML_GPM_METRIC_GRAPHICS_UTIL, 5), 0) << "zero fault at 5";
}

// ---------------------------------------------------------------------------------------------
// MIG instances

TEST_F(SimGpmTest, InstanceMetricsDeriveFromTheInstanceUtil) {
  Load("mig-h100");
  nvmlDevice_t parent = Device(0);
  struct Instance {
    unsigned gi;
    double util;
  };
  for (Instance inst : {Instance{2, 80}, Instance{3, 40}, Instance{9, 5}}) {
    SCOPED_TRACE(inst.gi);
    const double u = inst.util;
    const auto e = Entries(
        MigSamplePair(parent, inst.gi, 1, 2),
        {NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY,
         NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_HMMA_TENSOR_UTIL,
         NVML_GPM_METRIC_IMMA_TENSOR_UTIL, NVML_GPM_METRIC_DFMA_TENSOR_UTIL,
         NVML_GPM_METRIC_FP64_UTIL, NVML_GPM_METRIC_FP32_UTIL, NVML_GPM_METRIC_FP16_UTIL,
         NVML_GPM_METRIC_INTEGER_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL});
    const double expected[] = {u,
                               u * 0.9,
                               u * 0.45,
                               u * 0.6,
                               u * 0.6 * 0.8,
                               u * 0.6 * 0.15,
                               u * 0.6 * 0.05,
                               u * 0.05,
                               u * 0.3,
                               u * 0.2,
                               u * 0.1,
                               38};  // the parent's mem_util
    for (size_t i = 0; i < e.size(); ++i) {
      EXPECT_EQ(e[i].nvmlReturn, NVML_SUCCESS) << e[i].metricId;
      EXPECT_DOUBLE_EQ(e[i].value, expected[i]) << e[i].metricId;
    }
  }
  // PCIe and NVLink are GPU-level: the instance has none, the parent GPU does.
  const std::vector<unsigned> gpu_level = {
      NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC,
      NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
      NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC};
  for (const auto& e : Entries(MigSamplePair(parent, 2, 1, 2), gpu_level)) {
    EXPECT_EQ(e.nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << e.metricId;
  }
  for (const auto& e : Entries(SamplePair(parent, 1, 2), gpu_level)) {
    EXPECT_EQ(e.nvmlReturn, NVML_SUCCESS) << e.metricId;
  }
  EXPECT_DOUBLE_EQ(Metric(parent, NVML_GPM_METRIC_PCIE_RX_PER_SEC, 2), 1500e6 / kMiB);
  EXPECT_DOUBLE_EQ(Metric(parent, NVML_GPM_METRIC_GRAPHICS_UTIL, 2), 62) << "the GPU as a whole";
}

// ---------------------------------------------------------------------------------------------
// nvmlDeviceGetPcieThroughput

TEST_F(SimGpmTest, PcieThroughputIsTheChannelInKilobytesPerSecond) {
  Load("profiling-faults");
  nvmlDevice_t d = Device(0);
  unsigned kb = 0;
  ASSERT_EQ(api.PcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 500'000u);
  ASSERT_EQ(api.PcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 2'000'000u);
  EXPECT_EQ(api.PcieThroughput(d, 2, &kb), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.PcieThroughput(d, -1, &kb), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.PcieThroughput(d, NVML_PCIE_UTIL_TX_BYTES, nullptr), NVML_ERROR_INVALID_ARGUMENT);

  TempScenario file("pcie.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, load: [{t: 0, util: 50}]}
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, unsupported: [pcie_throughput]}
)");
  Reload(file.path());
  ASSERT_EQ(api.PcieThroughput(Device(0), NVML_PCIE_UTIL_TX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 100'000u) << "default: 2 MB/s per percent of util";
  ASSERT_EQ(api.PcieThroughput(Device(0), NVML_PCIE_UTIL_RX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 200'000u) << "default: 4 MB/s per percent of util";
  EXPECT_EQ(api.PcieThroughput(Device(1), NVML_PCIE_UTIL_TX_BYTES, &kb), NVML_ERROR_NOT_SUPPORTED);

  Reload("mig-h100");
  EXPECT_EQ(api.PcieThroughput(MigDevice(Device(0), 0), NVML_PCIE_UTIL_TX_BYTES, &kb),
            NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(api.PcieThroughput(Device(0), NVML_PCIE_UTIL_TX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 400'000u);
}

// ---------------------------------------------------------------------------------------------
// nvmlDeviceGet{Max,Curr}PcieLink{Generation,Width}

TEST_F(SimGpmTest, PcieLinkIsTheScenariosGenerationAndWidth) {
  // One value of each getter: {max gen, max width, current gen, current width}.
  auto link = [&](nvmlDevice_t d) {
    std::vector<unsigned> v(4, 0);
    EXPECT_EQ(api.MaxPcieLinkGen(d, &v[0]), NVML_SUCCESS);
    EXPECT_EQ(api.MaxPcieLinkWidth(d, &v[1]), NVML_SUCCESS);
    EXPECT_EQ(api.CurrPcieLinkGen(d, &v[2]), NVML_SUCCESS);
    EXPECT_EQ(api.CurrPcieLinkWidth(d, &v[3]), NVML_SUCCESS);
    return v;
  };
  Load("8xH100");
  EXPECT_EQ(link(Device(0)), std::vector<unsigned>({5, 16, 5, 16})) << "H100 SXM: gen 5 x16";
  Reload("4xA40-tp2");
  EXPECT_EQ(link(Device(0)), std::vector<unsigned>({4, 16, 4, 16})) << "A40: gen 4 x16";

  TempScenario file("link.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, pcie_link_gen: 3, pcie_link_width: 8}
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, unsupported: [pcie_link]}
  - {name: G, memory_total_mib: 1024, power_limit_w: 100}
faults:
  - {at: 1, until: 2, device: 2, kind: not_supported, calls: [pcie_link]}
)");
  Reload(file.path());
  EXPECT_EQ(link(Device(0)), std::vector<unsigned>({3, 8, 3, 8}));
  unsigned n = 0;
  EXPECT_EQ(api.MaxPcieLinkGen(Device(1), &n), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.MaxPcieLinkWidth(Device(1), &n), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.CurrPcieLinkGen(Device(1), &n), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.CurrPcieLinkWidth(Device(1), &n), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.MaxPcieLinkGen(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.CurrPcieLinkWidth(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  At(1.5);
  EXPECT_EQ(api.CurrPcieLinkGen(Device(2), &n), NVML_ERROR_NOT_SUPPORTED);
  At(2);
  EXPECT_EQ(link(Device(2)), std::vector<unsigned>({4, 16, 4, 16}));

  Reload("mig-h100");
  EXPECT_EQ(api.MaxPcieLinkGen(MigDevice(Device(0), 0), &n), NVML_ERROR_NOT_SUPPORTED);
  Reload("sensorless");
  EXPECT_EQ(link(Device(0)), std::vector<unsigned>({4, 16, 4, 16})) << "L40S: gen 4 x16";
  EXPECT_EQ(api.CurrPcieLinkGen(Device(3), &n), NVML_ERROR_NOT_SUPPORTED) << "hidden by the VM";
}

// ---------------------------------------------------------------------------------------------
// nvmlDeviceGetFanSpeed

TEST_F(SimGpmTest, FanSpeedFollowsTheTemperatureWhereThereIsAFan) {
  TempScenario file("fan.yaml", R"(
device_defaults: {memory_total_mib: 1024, power_limit_w: 400, idle_power_w: 100, idle_temp_c: 30,
                  max_temp_c: 80, wobble: false}
devices:
  - {name: Half, fan: true, load: [{t: 0, util: 50, power_w: 250}]}
  - {name: Full, fan: true, load: [{t: 0, util: 99, power_w: 400}]}
  - {name: Passive, load: [{t: 0, util: 50, power_w: 250}]}
  - {name: Flat, fan: true, idle_temp_c: 50, max_temp_c: 50, load: [{t: 0, util: 50, power_w: 250}]}
)");
  Load(file.path());
  unsigned percent = 0;
  At(0);
  ASSERT_EQ(api.FanSpeed(Device(0), &percent), NVML_SUCCESS);
  EXPECT_EQ(percent, 30u) << "cold start: idle temperature";
  At(10);
  ASSERT_EQ(api.FanSpeed(Device(0), &percent), NVML_SUCCESS);
  EXPECT_EQ(percent, 65u) << "halfway: 30 + 70 x 0.5";
  ASSERT_EQ(api.FanSpeed(Device(1), &percent), NVML_SUCCESS);
  EXPECT_EQ(percent, 100u) << "at the power limit";
  EXPECT_EQ(api.FanSpeed(Device(2), &percent), NVML_ERROR_NOT_SUPPORTED) << "fan: false";
  ASSERT_EQ(api.FanSpeed(Device(3), &percent), NVML_SUCCESS);
  EXPECT_EQ(percent, 30u) << "max_temp_c = idle_temp_c";
  EXPECT_EQ(api.FanSpeed(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  // On a built-in: the formula over the reported temperature (idle 32 °C, max 74 °C).
  Reload("profiling-faults");
  At(10);
  unsigned temp = 0;
  ASSERT_EQ(api.Temperature(Device(0), NVML_TEMPERATURE_GPU, &temp), NVML_SUCCESS);
  ASSERT_EQ(api.FanSpeed(Device(0), &percent), NVML_SUCCESS);
  EXPECT_EQ(percent, static_cast<unsigned>(std::lround(30 + 70.0 * (temp - 32.0) / 42.0)));
  EXPECT_EQ(api.FanSpeed(Device(1), &percent), NVML_ERROR_NOT_SUPPORTED);

  TempScenario gated("fan-gated.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, fan: true}
faults:
  - {at: 1, until: 2, device: 0, kind: not_supported, calls: [fan_speed]}
)");
  Reload(gated.path());
  At(1.5);
  EXPECT_EQ(api.FanSpeed(Device(0), &percent), NVML_ERROR_NOT_SUPPORTED);
  At(2);
  EXPECT_EQ(api.FanSpeed(Device(0), &percent), NVML_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// nvmlDeviceGetViolationStatus

TEST_F(SimGpmTest, PowerViolationTimerAdvancesOnlyWhileThrottled) {
  Load("profiling-faults");  // sw_power_cap on GPU 0 from 0.5 to 1.5
  nvmlDevice_t d = Device(0);
  for (auto [t, ns] : {std::pair{0.0, 0ULL}, std::pair{0.5, 0ULL}, std::pair{1.0, 500'000'000ULL},
                       std::pair{1.5, 1'000'000'000ULL}, std::pair{3.0, 1'000'000'000ULL},
                       std::pair{100.0, 1'000'000'000ULL}}) {
    SCOPED_TRACE(t);
    At(t);
    EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER), ns);
    EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_THERMAL), 0u);
    EXPECT_EQ(ViolationNs(Device(1), NVML_PERF_POLICY_POWER), 0u) << "other GPUs unaffected";
  }
  At(1.0);
  nvmlViolationTime_t v{};
  ASSERT_EQ(api.ViolationStatus(d, NVML_PERF_POLICY_POWER, &v), NVML_SUCCESS);
  const nvmlFieldValue_t f = FieldEntry(d, NVML_FI_DEV_POWER_INSTANT);
  EXPECT_EQ(static_cast<long long>(v.referenceTime), f.timestamp) << "microseconds since 1970 at t";
}

TEST_F(SimGpmTest, ViolationTimersCountOverlappingFaultsOncePerPolicy) {
  TempScenario file("violations.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100}
faults:
  - {at: 1, until: 3, device: 0, kind: throttle, reasons: [sw_power_cap]}
  - {at: 2, until: 4, device: 0, kind: throttle, reasons: [hw_power_brake_slowdown, hw_slowdown]}
  - {at: 5, device: 0, kind: throttle, reasons: [sw_thermal_slowdown]}
  - {at: 6, until: 7, device: 0, kind: throttle, reasons: [hw_thermal_slowdown, sync_boost]}
  - {at: 0, device: 0, kind: throttle, reasons: [applications_clocks_setting]}
)");
  Load(file.path());
  nvmlDevice_t d = Device(0);
  At(2.5);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER), 1'500'000'000u);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_BOARD_LIMIT), 500'000'000u);
  At(10);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_POWER), 3'000'000'000u) << "[1, 3) u [2, 4)";
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_THERMAL), 5'000'000'000u) << "[5, 10] u [6, 7)";
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_SYNC_BOOST), 1'000'000'000u);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_BOARD_LIMIT), 2'000'000'000u);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_LOW_UTILIZATION), 0u);
  EXPECT_EQ(ViolationNs(d, NVML_PERF_POLICY_RELIABILITY), 0u);
}

TEST_F(SimGpmTest, ViolationStatusErrors) {
  Load("mig-h100");
  nvmlDevice_t d = Device(0);
  nvmlViolationTime_t v{};
  EXPECT_EQ(api.ViolationStatus(d, 6, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ViolationStatus(d, -1, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ViolationStatus(d, NVML_PERF_POLICY_POWER, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.ViolationStatus(MigDevice(d, 0), NVML_PERF_POLICY_POWER, &v),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.ViolationStatus(d, NVML_PERF_POLICY_POWER, &v), NVML_SUCCESS);

  TempScenario file("gated.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, unsupported: [violation_status]}
)");
  Reload(file.path());
  EXPECT_EQ(api.ViolationStatus(Device(0), NVML_PERF_POLICY_POWER, &v), NVML_ERROR_NOT_SUPPORTED);
}

// ---------------------------------------------------------------------------------------------
// NVLink

constexpr const char* kLinksYaml = R"(
devices:
  - name: "NVIDIA H100 80GB HBM3"
    memory_total_mib: 1024
    power_limit_w: 700
    nvlink_links: 4
    counters: {nvlink_crc_flit: 3, nvlink_replay: 7}
    load:
      repeat_s: 10
      keyframes:
        - {t: 0, util: 50, nvlink_tx_mb_s: 4096, nvlink_rx_mb_s: 0}
        - {t: 4, nvlink_tx_mb_s: 4096, nvlink_rx_mb_s: 8192}
        - {t: 6, nvlink_tx_mb_s: 1024}
  - {name: "No links", memory_total_mib: 1024, power_limit_w: 100}
faults:
  - {at: 2, device: 0, kind: nvlink_errors, nvlink_crc_flit: 1, nvlink_crc_data: 2,
     nvlink_recovery: 4}
)";

TEST_F(SimGpmTest, NvlinkCountFieldsAndErrorTotals) {
  TempScenario file("links.yaml", kLinksYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  nvmlFieldValue_t count = FieldEntry(d, NVML_FI_DEV_NVLINK_LINK_COUNT);
  EXPECT_EQ(count.nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(count.valueType, NVML_VALUE_TYPE_UNSIGNED_INT);
  EXPECT_EQ(count.value.uiVal, 4u);
  const unsigned totals[] = {
      NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
      NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL};
  for (auto [t, expected] : {std::pair{1.99, std::vector<unsigned long long>{3, 0, 7, 0}},
                             std::pair{2.0, std::vector<unsigned long long>{4, 2, 7, 4}}}) {
    At(t);
    for (size_t i = 0; i < 4; ++i) {
      const nvmlFieldValue_t v = FieldEntry(d, totals[i]);
      EXPECT_EQ(v.nvmlReturn, NVML_SUCCESS) << totals[i];
      EXPECT_EQ(v.valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
      EXPECT_EQ(v.value.ullVal, expected[i]) << totals[i] << " at " << t;
    }
  }
  // No links: every NVLink entry is NOT_SUPPORTED, the call itself succeeds.
  for (unsigned id : {38u, 45u, 52u, 59u, 91u, 138u, 139u}) {
    EXPECT_EQ(FieldEntry(Device(1), id).nvmlReturn, NVML_ERROR_NOT_SUPPORTED) << id;
  }
}

TEST_F(SimGpmTest, NvlinkTrafficCounterDifferenceMatchesTheRate) {
  TempScenario file("links.yaml", kLinksYaml);
  Load(file.path());
  nvmlDevice_t d = Device(0);
  auto kib = [&](unsigned field, unsigned link, double t) {
    At(t);
    const nvmlFieldValue_t v = FieldEntry(d, field, link);
    EXPECT_EQ(v.nvmlReturn, NVML_SUCCESS);
    EXPECT_EQ(v.valueType, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG);
    return static_cast<double>(v.value.ullVal);
  };
  const unsigned tx = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
                 rx = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
  EXPECT_EQ(kib(tx, 0, 0), 0) << "since t = 0";
  // 4096 MB/s over 4 links for 2 s: 2.048e9 bytes per link = 2,000,000 KiB.
  EXPECT_NEAR(kib(tx, 0, 3) - kib(tx, 0, 1), 2'000'000, 1);
  EXPECT_NEAR(kib(tx, 3, 3) - kib(tx, 3, 1), 2'000'000, 1) << "every link alike";
  // The rate GPM reports (MiB/s) is the counter's slope.
  const double rate = Metric(d, NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 1, 2);
  EXPECT_DOUBLE_EQ(rate * kMiB, 1024e6);
  // A ramp: rx goes 0 -> 8192 MB/s over [0, 4], so [0, 4] moves 16384 MB, 4096 MB per link.
  EXPECT_NEAR(kib(rx, 2, 4), 4096e6 / 1024, 1);
  // One whole loop of tx: (4096 x 4 + 2560 x 2 + 1024 x 4) MB = 25600 MB, 6400 MB per link.
  EXPECT_NEAR(kib(tx, 1, 37) - kib(tx, 1, 27), 6400e6 / 1024, 1);

  At(3);
  EXPECT_EQ(FieldEntry(d, tx, 4).nvmlReturn, NVML_ERROR_INVALID_ARGUMENT) << "link 4 of 4";
  EXPECT_EQ(FieldEntry(d, rx, 99).nvmlReturn, NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimGpmTest, NvlinkCounterIsTheIntegralOfTheGpmRateAcrossLoops) {
  // 8xH100 loops every 12 s with ramps between compute and all-reduce; [3, 27] crosses two loop
  // boundaries. Trapezoid rule over the per-link rate GPM reports.
  Load("8xH100");
  nvmlDevice_t d = Device(5);
  const unsigned l0_tx = NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC + 1;
  nvmlGpmSample_t a = NewSample(), b = NewSample();
  auto rate = [&](double t) {
    At(t);
    EXPECT_EQ(api.GpmSampleGet(d, a), NVML_SUCCESS);
    EXPECT_EQ(api.GpmSampleGet(d, b), NVML_SUCCESS);
    std::vector<nvmlGpmMetric_t> m;
    EXPECT_EQ(Get(a, b, {l0_tx}, &m), NVML_SUCCESS);
    return m[0].value * kMiB;  // bytes per second
  };
  const double t0 = 3, t1 = 27, dt = 0.01;
  const int steps = static_cast<int>(std::lround((t1 - t0) / dt));
  double bytes = 0.5 * (rate(t0) + rate(t1));
  for (int i = 1; i < steps; ++i) bytes += rate(t0 + i * dt);
  bytes *= dt;
  At(t0);
  const nvmlFieldValue_t v0 = FieldEntry(d, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0);
  At(t1);
  const nvmlFieldValue_t v1 = FieldEntry(d, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 0);
  const double counted = static_cast<double>(v1.value.ullVal - v0.value.ullVal) * 1024;
  EXPECT_NEAR(counted, bytes, bytes * 0.001);
}

TEST_F(SimGpmTest, NvlinkStateAndItsGate) {
  TempScenario file("links.yaml", kLinksYaml);
  Load(file.path());
  int active = -1;
  ASSERT_EQ(api.NvLinkState(Device(0), 3, &active), NVML_SUCCESS);
  EXPECT_EQ(active, NVML_FEATURE_ENABLED);
  EXPECT_EQ(api.NvLinkState(Device(0), 4, &active), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.NvLinkState(Device(0), 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(api.NvLinkState(Device(1), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.NvLinkState(Device(1), 99, &active), NVML_ERROR_NOT_SUPPORTED)
      << "no NVLink at all: no link to be out of range";

  TempScenario gated("links-gated.yaml", R"(
devices:
  - {name: G, memory_total_mib: 1024, power_limit_w: 100, nvlink_links: 2}
faults:
  - {at: 1, until: 2, device: 0, kind: not_supported, calls: [nvlink]}
)");
  Reload(gated.path());
  At(1.5);
  EXPECT_EQ(api.NvLinkState(Device(0), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(FieldEntry(Device(0), NVML_FI_DEV_NVLINK_LINK_COUNT).nvmlReturn,
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(FieldEntry(Device(0), NVML_FI_DEV_POWER_INSTANT).nvmlReturn, NVML_SUCCESS);
  At(2);
  EXPECT_EQ(api.NvLinkState(Device(0), 1, &active), NVML_SUCCESS);
  EXPECT_EQ(FieldEntry(Device(0), NVML_FI_DEV_NVLINK_LINK_COUNT).value.uiVal, 2u);

  Reload("mig-h100");
  EXPECT_EQ(api.NvLinkState(MigDevice(Device(0), 0), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(api.NvLinkState(Device(0), 17, &active), NVML_SUCCESS);
}

// ---------------------------------------------------------------------------------------------
// The built-ins show the activity

TEST_F(SimGpmTest, HgxScenariosShowTensorAndNvlinkActivity) {
  Load("8xH100");
  nvmlDevice_t d = Device(0);
  const double compute_tensor = Metric(d, NVML_GPM_METRIC_ANY_TENSOR_UTIL, 5);
  const double allreduce_tensor = Metric(d, NVML_GPM_METRIC_ANY_TENSOR_UTIL, 10);
  EXPECT_GT(compute_tensor, 70);
  EXPECT_LT(allreduce_tensor, 10);
  EXPECT_DOUBLE_EQ(Metric(d, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, 10), 310000e6 / kMiB);
  EXPECT_GT(Metric(d, NVML_GPM_METRIC_DRAM_BW_UTIL, 5), 50);
  EXPECT_EQ(FieldEntry(d, NVML_FI_DEV_NVLINK_LINK_COUNT).value.uiVal, 18u);
  unsigned kb = 0;
  At(5);
  ASSERT_EQ(api.PcieThroughput(d, NVML_PCIE_UTIL_RX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 2'400'000u);

  Reload("1xH200");
  At(17);  // checkpoint: weights go out over PCIe
  ASSERT_EQ(api.PcieThroughput(Device(0), NVML_PCIE_UTIL_TX_BYTES, &kb), NVML_SUCCESS);
  EXPECT_EQ(kb, 12'000'000u);
  EXPECT_EQ(Metric(Device(0), NVML_GPM_METRIC_ANY_TENSOR_UTIL, 17), 0);
  EXPECT_GT(Metric(Device(0), NVML_GPM_METRIC_ANY_TENSOR_UTIL, 4), 70);

  Reload("k8s-8xH100");
  EXPECT_EQ(FieldEntry(Device(7), NVML_FI_DEV_NVLINK_LINK_COUNT).value.uiVal, 18u);
}

}  // namespace
}  // namespace gpulse::sim::testing
