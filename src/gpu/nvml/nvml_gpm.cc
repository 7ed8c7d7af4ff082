#include "gpu/nvml/nvml_gpm.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

constexpr unsigned kGraphicsMetric = NVML_GPM_METRIC_GRAPHICS_UTIL;

// A ratio this far above 100 % is rounding in the driver (clamped to 1); beyond it, impossible.
constexpr double kPercentTolerance = 1.0;

// `value` (as GPM gives it: percent or MiB/s) as a reading of `field`, or nullopt when impossible.
std::optional<double> Checked(const FieldSpec& field, double value) {
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  if (field.unit != Unit::kRatio) return value * field.scale;
  if (value > 100.0 + kPercentTolerance) return std::nullopt;
  return std::min(value, 100.0) * field.scale;
}

// Whether a failed support query says something lasting about the GPU (else it is retried).
bool Final(nvmlReturn_t rc) {
  ErrorClass c = Classify(rc);
  return c == ErrorClass::kNotSupported || c == ErrorClass::kNoPermission;
}

std::string ReasonFor(nvmlReturn_t rc) {
  switch (Classify(rc)) {
    case ErrorClass::kNotSupported:
      return "the GPU has no GPM (profiling needs Hopper or later)";
    case ErrorClass::kNoPermission:
      return "GPM is not permitted to this user";
    default:
      return "the GPM support query failed (error " + std::to_string(rc) + ")";
  }
}

}  // namespace

GpmReader::GpmReader(const NvmlApi* api, nvmlDevice_t device,
                     std::optional<unsigned> gpu_instance_id)
    : api_(api), device_(device), gpu_instance_id_(gpu_instance_id) {}

GpmReader::GpmReader(GpmReader&& other) noexcept
    : api_(other.api_),
      device_(other.device_),
      gpu_instance_id_(other.gpu_instance_id_),
      supported_(other.supported_),
      reason_(std::move(other.reason_)),
      latest_(other.latest_),
      latest_ns_(other.latest_ns_),
      values_(std::move(other.values_)),
      request_(std::move(other.request_)),
      planned_(std::move(other.planned_)),
      planned_field_(std::move(other.planned_field_)),
      plan_valid_(other.plan_valid_),
      metric_unsupported_(std::move(other.metric_unsupported_)),
      graphics_percent_(other.graphics_percent_),
      zero_while_busy_(other.zero_while_busy_),
      stuck_(other.stuck_),
      lost_(other.lost_) {
  for (int i = 0; i < 2; ++i) std::swap(samples_[i], other.samples_[i]);
}

GpmReader::~GpmReader() {
  for (nvmlGpmSample_t s : samples_) {
    if (s != nullptr && api_->GpmSampleFree != nullptr) api_->GpmSampleFree(s);
  }
}

bool GpmReader::Supported() {
  if (supported_) return *supported_;
  const NvmlApi& a = *api_;
  const bool mig = gpu_instance_id_.has_value();
  if (!a.GpmQueryDeviceSupport || !a.GpmSampleAlloc || !a.GpmSampleFree || !a.GpmMetricsGet ||
      (mig ? !a.GpmMigSampleGet : !a.GpmSampleGet)) {
    reason_ = "the NVML library has no GPM functions (driver older than R520)";
    supported_ = false;
    return false;
  }
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;
  nvmlReturn_t rc = a.GpmQueryDeviceSupport(device_, &support);
  if (rc != NVML_SUCCESS) {
    // A transient failure is not a verdict: the next read asks again.
    reason_ = ReasonFor(rc);
    if (Final(rc)) supported_ = false;
    return false;
  }
  if (support.isSupportedDevice == 0) {
    reason_ = "the GPU has no GPM (profiling needs Hopper or later)";
    supported_ = false;
    return false;
  }
  for (nvmlGpmSample_t& s : samples_) {
    if (s == nullptr && (a.GpmSampleAlloc(&s) != NVML_SUCCESS || s == nullptr)) {
      s = nullptr;
      reason_ = "the driver could not allocate GPM samples (asked again at the next read)";
      return false;
    }
  }
  reason_.clear();
  values_.assign(AllFields().size(), std::nullopt);
  metric_unsupported_.assign(AllFields().size(), false);
  supported_ = true;
  return true;
}

nvmlReturn_t GpmReader::TakeSample(nvmlGpmSample_t sample) {
  return gpu_instance_id_ ? api_->GpmMigSampleGet(device_, *gpu_instance_id_, sample)
                          : api_->GpmSampleGet(device_, sample);
}

void GpmReader::Prime(std::int64_t now_ns, gpu::ReadStats& stats) {
  if (primed() || !Supported()) return;
  if (nvmlReturn_t rc = TakeSample(samples_[0]); rc != NVML_SUCCESS) {
    if (Classify(rc) == ErrorClass::kGpuLost) {
      lost_ = true;
      return;
    }
    ++stats.failed_calls;
    ++stats.profiling_failed_calls;
    return;
  }
  latest_ = 0;
  latest_ns_ = now_ns;
}

void GpmReader::Read(std::span<const FieldIndex> fields, std::int64_t now_ns,
                     std::optional<double> busy_percent, Sample& out, gpu::ReadStats& stats) {
  bool any = false;
  for (FieldIndex f : fields) any = any || FieldAt(f).nvml == NvmlSource::kGpm;
  if (!any) return;
  if (!Supported()) {
    if (!supported_) {  // a transient failure: absent this read and counted, not "unsupported"
      ++stats.failed_calls;
      ++stats.profiling_failed_calls;
      return;
    }
    for (FieldIndex f : fields) {
      if (FieldAt(f).nvml == NvmlSource::kGpm) out.unsupported[f] = true;
    }
    return;
  }
  if (!primed()) {
    Prime(now_ns, stats);  // the values come with the next read
  } else if (now_ns - latest_ns_ >= kGpmMinIntervalNs) {
    const int next = 1 - latest_;
    nvmlReturn_t rc = TakeSample(samples_[next]);
    if (rc == NVML_SUCCESS) {
      Compute(fields, samples_[latest_], samples_[next], stats);
      latest_ = next;
      latest_ns_ = now_ns;
      CheckStuck(busy_percent);
    } else {
      if (Classify(rc) == ErrorClass::kGpuLost) {
        lost_ = true;  // DeviceReader marks the device lost this read
        return;
      }
      ++stats.failed_calls;
      ++stats.profiling_failed_calls;
      for (int f : planned_field_) {
        if (f >= 0) values_[f].reset();
      }
    }
  }
  for (FieldIndex f : fields) {
    if (FieldAt(f).nvml != NvmlSource::kGpm) continue;
    out.values[f] = values_[f];
    out.unsupported[f] = !values_[f] && metric_unsupported_[f];
  }
}

void GpmReader::Plan(std::span<const FieldIndex> fields) {
  if (plan_valid_ && std::equal(fields.begin(), fields.end(), planned_.begin(), planned_.end()))
    return;
  if (request_ == nullptr) request_ = std::make_unique<nvmlGpmMetricsGet_t>();
  planned_.assign(fields.begin(), fields.end());
  planned_field_.clear();
  request_->numMetrics = 0;
  std::array<bool, NVML_GPM_METRIC_MAX> added{};
  auto add = [&](unsigned metric, int field) {
    if (metric >= NVML_GPM_METRIC_MAX || added[metric]) return;
    added[metric] = true;
    request_->metrics[request_->numMetrics++].metricId = metric;
    planned_field_.push_back(field);
  };
  for (FieldIndex f : fields) {
    const FieldSpec& spec = FieldAt(f);
    if (spec.nvml != NvmlSource::kGpm) continue;
    // A MIG instance has the activity ratios only; PCIe and NVLink rates are the GPU's.
    if (gpu_instance_id_ && !spec.per_instance) metric_unsupported_[f] = true;
    if (!metric_unsupported_[f]) add(spec.gpm, f);
  }
  add(kGraphicsMetric, -1);  // always: the stuck-at-zero check needs it (a no-op when asked for)
  plan_valid_ = true;
}

void GpmReader::Compute(std::span<const FieldIndex> fields, nvmlGpmSample_t earlier,
                        nvmlGpmSample_t later, gpu::ReadStats& stats) {
  Plan(fields);
  for (int f : planned_field_) {
    if (f >= 0) values_[f].reset();
  }
  nvmlGpmMetricsGet_t& request = *request_;
  request.version = NVML_GPM_METRICS_GET_VERSION;
  request.sample1 = earlier;
  request.sample2 = later;
  for (unsigned i = 0; i < request.numMetrics; ++i)
    request.metrics[i].nvmlReturn = NVML_ERROR_UNKNOWN;
  graphics_percent_.reset();
  nvmlReturn_t rc = api_->GpmMetricsGet(&request);
  if (rc != NVML_SUCCESS) {
    ++stats.failed_calls;
    ++stats.profiling_failed_calls;
    return;
  }
  for (unsigned i = 0; i < request.numMetrics; ++i) {
    const nvmlGpmMetric_t& m = request.metrics[i];
    if (m.metricId == kGraphicsMetric && m.nvmlReturn == NVML_SUCCESS && std::isfinite(m.value)) {
      graphics_percent_ = m.value;
    }
    const int f = planned_field_[i];
    if (f < 0) continue;
    const FieldSpec& spec = FieldAt(static_cast<FieldIndex>(f));
    if (m.nvmlReturn != NVML_SUCCESS) {
      ErrorClass c = Classify(m.nvmlReturn);
      if (c == ErrorClass::kNotSupported || c == ErrorClass::kNoPermission) {
        metric_unsupported_[f] = true;
        plan_valid_ = false;  // not asked again
        ++stats.unsupported_calls;
      } else {
        ++stats.failed_calls;
        ++stats.profiling_failed_calls;
      }
      continue;
    }
    std::optional<double> v = Checked(spec, m.value);
    if (!v) {
      ++stats.profiling_rejected_values;
      continue;
    }
    values_[f] = v;
  }
}

void GpmReader::CheckStuck(std::optional<double> busy_percent) {
  if (!graphics_percent_ || !busy_percent) {  // nothing to compare this read: no verdict
    zero_while_busy_ = 0;
    stuck_ = false;
    return;
  }
  if (*graphics_percent_ == 0.0 && *busy_percent >= kStuckBusyPercent) {
    zero_while_busy_ = std::min(zero_while_busy_ + 1, kStuckReads);
  } else {
    zero_while_busy_ = 0;
  }
  stuck_ = zero_while_busy_ >= kStuckReads;
}

}  // namespace gpulse::nvml
