// GPU Performance Monitoring (GPM): the support query, samples, and metrics. A sample records which
// scope it covers (a GPU, or one MIG instance of it) and the simulator time; nvmlGpmMetricsGet
// turns two samples of one scope into metric values computed from the load at the later sample's
// time (activity.h). The values do not depend on how far apart the samples are, so a test with a
// frozen clock gets exact answers.
#include <optional>

#include "activity.h"
#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::DeviceCtx;
using gpulse::sim::GpmActivity;
using gpulse::sim::GpmFaultMode;
using gpulse::sim::GpmSample;
using gpulse::sim::LoadLevels;
using gpulse::sim::MigConfig;
using gpulse::sim::OnDevice;
using gpulse::sim::OnSession;
using gpulse::sim::Session;
using gpulse::sim::Simulator;

namespace {

// More samples than any caller needs (gpulse keeps two per GPU and per MIG instance): a caller that
// leaks them gets NVML_ERROR_MEMORY, as from a driver out of memory, instead of growing forever.
constexpr size_t kMaxGpmSamples = 4096;

bool SameScope(const GpmSample& a, const GpmSample& b) {
  return a.device == b.device && a.mig_slot == b.mig_slot;
}

// The slot of the first instance with GPU instance id `gpu_instance_id`, or -1.
int SlotOf(const MigConfig& mig, unsigned gpu_instance_id) {
  for (size_t i = 0; i < mig.instances.size(); ++i) {
    if (mig.instances[i].gpu_instance_id == gpu_instance_id) return static_cast<int>(i);
  }
  return -1;
}

GpmActivity GpuActivity(const LoadLevels& l, unsigned nvlink_links) {
  GpmActivity a;
  a.graphics = l.util;
  a.sm_active = l.sm_active;
  a.sm_occupancy = l.sm_occupancy;
  a.tensor = l.tensor;
  a.dram = l.dram;
  a.fp64 = l.fp64;
  a.fp32 = l.fp32;
  a.fp16 = l.fp16;
  a.integer = l.integer;
  a.decoder = l.dec_util;
  a.pcie_tx_mb_s = l.pcie_tx_mb_s;
  a.pcie_rx_mb_s = l.pcie_rx_mb_s;
  a.nvlink_tx_mb_s = l.nvlink_tx_mb_s;
  a.nvlink_rx_mb_s = l.nvlink_rx_mb_s;
  a.nvlink_links = nvlink_links;
  return a;
}

// The activity of the sample's scope at the sample's t.
GpmActivity ActivityOf(const Session& s, const GpmSample& sample) {
  const auto& spec = s.scenario().devices[sample.device];
  const LoadLevels l = s.model(sample.device).Levels(sample.t);
  if (sample.mig_slot < 0) return GpuActivity(l, spec.nvlink_links);
  const auto& instance = spec.mig.instances[sample.mig_slot];
  return gpulse::sim::InstanceActivity(instance.util.value_or(l.util), l.mem_util, l.dec_util);
}

void FillMetric(const GpmActivity& a, std::optional<GpmFaultMode> fault, nvmlGpmMetric_t& m) {
  const auto info = gpulse::sim::GpmMetricInfo(m.metricId);
  // The ABI declares char*; the driver's strings are static and callers never write them.
  m.metricInfo.shortName = info ? const_cast<char*>(info->short_name) : nullptr;
  m.metricInfo.longName = info ? const_cast<char*>(info->long_name) : nullptr;
  m.metricInfo.unit = info ? const_cast<char*>(info->unit) : nullptr;
  std::optional<double> value = gpulse::sim::GpmMetricValue(a, m.metricId);
  if (!value) {
    m.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    m.value = 0;
    return;
  }
  if (fault == GpmFaultMode::kZero) {
    value = 0.0;
  } else if (fault == GpmFaultMode::kOutOfRange) {
    value = gpulse::sim::IsRateMetric(m.metricId) ? gpulse::sim::kOutOfRangeRate
                                                  : gpulse::sim::kOutOfRangePercent;
  }
  m.nvmlReturn = NVML_SUCCESS;
  m.value = *value;
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                         nvmlGpmSupport_t* support) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (support == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (support->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    support->isSupportedDevice = c.spec().gpm ? 1 : 0;  // a MIG handle answers for its parent
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* sample) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    if (sample == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (s.gpm_sample_count() >= kMaxGpmSamples) return NVML_ERROR_MEMORY;
    *sample = s.AllocGpmSample();
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    return s.FreeGpmSample(sample) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t sample) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    GpmSample* out = c.session.FindGpmSample(sample);
    // Real NVML samples a MIG instance through its parent, with nvmlGpmMigSampleGet.
    if (out == nullptr || c.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kGpm); r != NVML_SUCCESS) return r;
    *out = GpmSample{true, c.index(), -1, c.t};
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned gpu_instance_id,
                                                   nvmlGpmSample_t sample) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    GpmSample* out = c.session.FindGpmSample(sample);
    if (out == nullptr || c.is_mig() || !c.spec().mig.enabled) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kGpm); r != NVML_SUCCESS) return r;
    const int slot = SlotOf(c.spec().mig, gpu_instance_id);
    if (slot < 0) return NVML_ERROR_NOT_FOUND;
    *out = GpmSample{true, c.index(), slot, c.t};
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* get) {
  return OnSession([&](Simulator&, Session& s) -> nvmlReturn_t {
    if (get == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (get->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (get->numMetrics > NVML_GPM_METRIC_MAX) return NVML_ERROR_INVALID_ARGUMENT;
    const GpmSample* first = s.FindGpmSample(get->sample1);
    const GpmSample* second = s.FindGpmSample(get->sample2);
    if (first == nullptr || second == nullptr || !first->filled || !second->filled ||
        !SameScope(*first, *second) || second->t < first->t) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    // Decided at the later sample, as its counters are what a stuck profiler would have frozen.
    const std::optional<GpmFaultMode> fault = s.faults().Gpm(second->device, second->t);
    if (fault == GpmFaultMode::kFail) return NVML_ERROR_UNKNOWN;
    const GpmActivity activity = ActivityOf(s, *second);
    for (unsigned i = 0; i < get->numMetrics; ++i) FillMetric(activity, fault, get->metrics[i]);
    return NVML_SUCCESS;
  });
}
