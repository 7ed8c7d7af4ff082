#include "gpu/nvml/nvml_reader.h"

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;



}  // namespace

Call CallFor(NvmlSource s) {
  switch (s) {
    case NvmlSource::kUtilizationGpu:
    case NvmlSource::kUtilizationMemory: return Call::kUtilization;
    case NvmlSource::kEncoderUtilization: return Call::kEncoder;
    case NvmlSource::kDecoderUtilization: return Call::kDecoder;
    case NvmlSource::kMemoryTotal:
    case NvmlSource::kMemoryFree:
    case NvmlSource::kMemoryUsed:
    case NvmlSource::kMemoryReserved: return Call::kMemoryV2;
    case NvmlSource::kPowerUsage: return Call::kPowerUsage;
    case NvmlSource::kPowerInstant: return Call::kFieldPowerInstant;
    case NvmlSource::kTotalEnergy: return Call::kEnergy;
    case NvmlSource::kEnforcedPowerLimit: return Call::kPowerLimit;
    case NvmlSource::kGpuTemperature: return Call::kTemperature;
    case NvmlSource::kMemoryTemperature: return Call::kFieldMemoryTemp;
    case NvmlSource::kSmClock: return Call::kSmClock;
    case NvmlSource::kMemClock: return Call::kMemClock;
    case NvmlSource::kPstate: return Call::kPstate;
    case NvmlSource::kClocksEventReasons: return Call::kClockReasons;
    case NvmlSource::kPcieReplay: return Call::kPcieReplay;
    case NvmlSource::kEccSbeVolatile: return Call::kEccSbeVolatile;
    case NvmlSource::kEccDbeVolatile: return Call::kEccDbeVolatile;
    case NvmlSource::kEccSbeAggregate: return Call::kEccSbeAggregate;
    case NvmlSource::kEccDbeAggregate: return Call::kEccDbeAggregate;
    case NvmlSource::kRetiredSbe: return Call::kRetiredSbe;
    case NvmlSource::kRetiredDbe: return Call::kRetiredDbe;
    case NvmlSource::kRetiredPending: return Call::kRetiredPending;
    case NvmlSource::kRemappedUncorrectable:
    case NvmlSource::kRemappedCorrectable:
    case NvmlSource::kRowRemapFailure: return Call::kRemappedRows;
    case NvmlSource::kLastXid: return Call::kXidEvents;
  }
  return Call::kXidEvents;
}

bool DeviceReader::Check(Call call, nvmlReturn_t rc, gpu::ReadStats& stats) {
  switch (Classify(rc)) {
    case ErrorClass::kOk:
      return true;
    case ErrorClass::kNotSupported:
    case ErrorClass::kNoPermission:  // this field is not readable by us: treat as unsupported
      MarkUnsupported(call);
      ++stats.unsupported_calls;
      return false;
    case ErrorClass::kGpuLost:
      lost_ = true;
      return false;
    case ErrorClass::kTransient:
      ++stats.failed_calls;
      return false;
  }
  return false;
}

DeviceReader DeviceReader::ForInstance(const NvmlApi* api, nvmlDevice_t handle) {
  DeviceReader r(api, handle);
  for (unsigned c = 0; c < static_cast<unsigned>(Call::kCount); ++c) {
    auto call = static_cast<Call>(c);
    if (call != Call::kMemoryV2 && call != Call::kMemoryV1) r.MarkUnsupported(call);
  }
  return r;
}

bool DeviceReader::SourceUnsupported(NvmlSource source) const {
  Call call = CallFor(source);
  if (call != Call::kMemoryV2) return unsupported(call);
  if (!unsupported(Call::kMemoryV2)) return false;
  // v1 has no reserved figure; the others fall back to v1.
  return source == NvmlSource::kMemoryReserved || unsupported(Call::kMemoryV1) ||
         api_->DeviceGetMemoryInfo == nullptr;
}

void DeviceReader::CopyXidCounts(Sample& out) const {
  for (const auto& [xid, count] : xid_counts_) out.xid_counts.push_back({xid, count});
}

void DeviceReader::Read(std::span<const FieldIndex> fields, Sample& out, gpu::ReadStats& stats) {
  out.values.assign(AllFields().size(), std::nullopt);
  out.unsupported.assign(AllFields().size(), false);
  out.xid_events.swap(pending_xids_);
  pending_xids_.clear();
  out.xid_counts.clear();
  std::bitset<static_cast<unsigned>(Call::kCount)> wanted;
  for (FieldIndex f : fields) wanted.set(static_cast<unsigned>(CallFor(FieldAt(f).nvml)));
  const bool xid_wanted = wanted[static_cast<unsigned>(Call::kXidEvents)];
  if (lost_) {
    // A lost GPU keeps the XIDs it raised up to and at its loss (their counters do not reset).
    out.state = DeviceState::kLost;
    if (xid_wanted && !unsupported(Call::kXidEvents)) CopyXidCounts(out);
    return;
  }
  // Memory comes from _v2 when the driver has it, else from v1 (which lacks the reserved figure).
  constexpr unsigned kV2 = static_cast<unsigned>(Call::kMemoryV2);
  if (wanted[kV2] && unsupported(Call::kMemoryV2)) wanted.set(static_cast<unsigned>(Call::kMemoryV1));
  wanted &= ~unsupported_;

  Values v;
  bool power_instant = wanted[static_cast<unsigned>(Call::kFieldPowerInstant)];
  bool memory_temp = wanted[static_cast<unsigned>(Call::kFieldMemoryTemp)];
  if (power_instant || memory_temp) ReadFieldValues(power_instant, memory_temp, v, stats);
  for (unsigned c = 0; c < static_cast<unsigned>(Call::kCount) && !lost_; ++c) {
    auto call = static_cast<Call>(c);
    if (wanted[c] && call != Call::kFieldPowerInstant && call != Call::kFieldMemoryTemp) {
      Perform(call, v, stats);
    }
  }
  if (lost_) {
    out.values.assign(AllFields().size(), std::nullopt);
    out.state = DeviceState::kLost;
    if (xid_wanted && !unsupported(Call::kXidEvents)) CopyXidCounts(out);
    return;
  }
  out.state = DeviceState::kOk;
  for (FieldIndex f : fields) {
    NvmlSource source = FieldAt(f).nvml;
    out.values[f] = v[static_cast<unsigned>(source)];
    if (!out.values[f] && SourceUnsupported(source)) out.unsupported[f] = true;
  }
  if (wanted[static_cast<unsigned>(Call::kXidEvents)]) CopyXidCounts(out);
}

void DeviceReader::ReadMemory(Values& v, gpu::ReadStats& stats) {
  const NvmlApi& a = *api_;
  if (a.DeviceGetMemoryInfo_v2 != nullptr && !unsupported(Call::kMemoryV2)) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    nvmlReturn_t rc = a.DeviceGetMemoryInfo_v2(handle_, &m);
    // A driver that rejects the struct version is treated like one without _v2: fall back to v1.
    if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) rc = NVML_ERROR_NOT_SUPPORTED;
    if (Check(Call::kMemoryV2, rc, stats)) {
      v[static_cast<unsigned>(NvmlSource::kMemoryTotal)] = m.total / kMiB;
      v[static_cast<unsigned>(NvmlSource::kMemoryFree)] = m.free / kMiB;
      v[static_cast<unsigned>(NvmlSource::kMemoryUsed)] = m.used / kMiB;
      v[static_cast<unsigned>(NvmlSource::kMemoryReserved)] = m.reserved / kMiB;
      return;
    }
    if (!unsupported(Call::kMemoryV2) || lost_) return;  // transient failure or lost: no fallback
  }
  if (a.DeviceGetMemoryInfo == nullptr || unsupported(Call::kMemoryV1)) return;
  nvmlMemory_t m{};
  if (Check(Call::kMemoryV1, a.DeviceGetMemoryInfo(handle_, &m), stats)) {
    v[static_cast<unsigned>(NvmlSource::kMemoryTotal)] = m.total / kMiB;
    v[static_cast<unsigned>(NvmlSource::kMemoryFree)] = m.free / kMiB;
    v[static_cast<unsigned>(NvmlSource::kMemoryUsed)] = m.used / kMiB;  // v1 counts reserved as used
  }
}

void DeviceReader::ReadFieldValues(bool power_instant, bool memory_temp, Values& v,
                                   gpu::ReadStats& stats) {
  if (api_->DeviceGetFieldValues == nullptr) {
    if (power_instant) MarkUnsupported(Call::kFieldPowerInstant);
    if (memory_temp) MarkUnsupported(Call::kFieldMemoryTemp);
    return;
  }
  struct Want {
    Call call;
    unsigned field_id;
    NvmlSource source;
    double scale;
  };
  Want wants[2];
  int n = 0;
  if (power_instant) wants[n++] = {Call::kFieldPowerInstant, NVML_FI_DEV_POWER_INSTANT, NvmlSource::kPowerInstant, 1e-3};
  if (memory_temp) wants[n++] = {Call::kFieldMemoryTemp, NVML_FI_DEV_MEMORY_TEMP, NvmlSource::kMemoryTemperature, 1.0};
  nvmlFieldValue_t values[2]{};
  for (int i = 0; i < n; ++i) values[i].fieldId = wants[i].field_id;
  nvmlReturn_t rc = api_->DeviceGetFieldValues(handle_, n, values);
  if (Classify(rc) != ErrorClass::kOk) {
    for (int i = 0; i < n && !lost_; ++i) Check(wants[i].call, rc, stats);
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (!Check(wants[i].call, values[i].nvmlReturn, stats)) continue;
    const nvmlValue_t& val = values[i].value;
    std::optional<double> x;
    switch (values[i].valueType) {
      case NVML_VALUE_TYPE_DOUBLE: x = val.dVal; break;
      case NVML_VALUE_TYPE_UNSIGNED_INT: x = val.uiVal; break;
      case NVML_VALUE_TYPE_UNSIGNED_LONG: x = static_cast<double>(val.ulVal); break;
      case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: x = static_cast<double>(val.ullVal); break;
      case NVML_VALUE_TYPE_SIGNED_LONG_LONG: x = static_cast<double>(val.sllVal); break;
      case NVML_VALUE_TYPE_SIGNED_INT: x = val.siVal; break;
      case NVML_VALUE_TYPE_UNSIGNED_SHORT: x = val.usVal; break;
      default: ++stats.failed_calls; break;  // an unknown value type is not guessed at
    }
    if (x) v[static_cast<unsigned>(wants[i].source)] = *x * wants[i].scale;
  }
}

void DeviceReader::Perform(Call call, Values& v, gpu::ReadStats& stats) {
  const NvmlApi& a = *api_;
  nvmlDevice_t h = handle_;
  auto slot = [&](NvmlSource s) -> std::optional<double>& { return v[static_cast<unsigned>(s)]; };
  auto absent_fn = [&](const void* fn) {
    if (fn == nullptr) MarkUnsupported(call);
    return fn == nullptr;
  };
  switch (call) {
    case Call::kUtilization: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetUtilizationRates))) return;
      nvmlUtilization_t u{};
      if (!Check(call, a.DeviceGetUtilizationRates(h, &u), stats)) return;
      slot(NvmlSource::kUtilizationGpu) = u.gpu;
      slot(NvmlSource::kUtilizationMemory) = u.memory;
      return;
    }
    case Call::kEncoder:
    case Call::kDecoder: {
      auto fn = call == Call::kEncoder ? a.DeviceGetEncoderUtilization : a.DeviceGetDecoderUtilization;
      if (absent_fn(reinterpret_cast<const void*>(fn))) return;
      unsigned util = 0, period = 0;
      if (!Check(call, fn(h, &util, &period), stats)) return;
      slot(call == Call::kEncoder ? NvmlSource::kEncoderUtilization : NvmlSource::kDecoderUtilization) = util;
      return;
    }
    case Call::kMemoryV2:
    case Call::kMemoryV1:
      ReadMemory(v, stats);
      return;
    case Call::kPowerUsage:
    case Call::kPowerLimit: {
      auto fn = call == Call::kPowerUsage ? a.DeviceGetPowerUsage : a.DeviceGetEnforcedPowerLimit;
      if (absent_fn(reinterpret_cast<const void*>(fn))) return;
      unsigned mw = 0;
      if (!Check(call, fn(h, &mw), stats)) return;
      slot(call == Call::kPowerUsage ? NvmlSource::kPowerUsage : NvmlSource::kEnforcedPowerLimit) = mw / 1000.0;
      return;
    }
    case Call::kEnergy: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetTotalEnergyConsumption))) return;
      unsigned long long mj = 0;
      if (Check(call, a.DeviceGetTotalEnergyConsumption(h, &mj), stats)) {
        slot(NvmlSource::kTotalEnergy) = static_cast<double>(mj);
      }
      return;
    }
    case Call::kTemperature: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetTemperature))) return;
      unsigned c = 0;
      if (Check(call, a.DeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &c), stats)) {
        slot(NvmlSource::kGpuTemperature) = c;
      }
      return;
    }
    case Call::kSmClock:
    case Call::kMemClock: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetClockInfo))) return;
      unsigned mhz = 0;
      int type = call == Call::kSmClock ? NVML_CLOCK_SM : NVML_CLOCK_MEM;
      if (Check(call, a.DeviceGetClockInfo(h, type, &mhz), stats)) {
        slot(call == Call::kSmClock ? NvmlSource::kSmClock : NvmlSource::kMemClock) = mhz;
      }
      return;
    }
    case Call::kPstate: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetPerformanceState))) return;
      int p = NVML_PSTATE_UNKNOWN;
      // NVML_PSTATE_UNKNOWN (32) is a sentinel, not a reading.
      if (Check(call, a.DeviceGetPerformanceState(h, &p), stats) && p >= 0 && p <= 15) {
        slot(NvmlSource::kPstate) = p;
      }
      return;
    }
    case Call::kClockReasons: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetCurrentClocksEventReasons))) return;
      unsigned long long mask = 0;
      if (Check(call, a.DeviceGetCurrentClocksEventReasons(h, &mask), stats)) {
        slot(NvmlSource::kClocksEventReasons) = static_cast<double>(mask);
      }
      return;
    }
    case Call::kPcieReplay: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetPcieReplayCounter))) return;
      unsigned n = 0;
      if (Check(call, a.DeviceGetPcieReplayCounter(h, &n), stats)) slot(NvmlSource::kPcieReplay) = n;
      return;
    }
    case Call::kEccSbeVolatile:
    case Call::kEccDbeVolatile:
    case Call::kEccSbeAggregate:
    case Call::kEccDbeAggregate: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetTotalEccErrors))) return;
      bool sbe = call == Call::kEccSbeVolatile || call == Call::kEccSbeAggregate;
      bool vol = call == Call::kEccSbeVolatile || call == Call::kEccDbeVolatile;
      unsigned long long n = 0;
      if (!Check(call, a.DeviceGetTotalEccErrors(h, sbe ? NVML_MEMORY_ERROR_TYPE_CORRECTED : NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                 vol ? NVML_VOLATILE_ECC : NVML_AGGREGATE_ECC, &n),
                 stats)) {
        return;
      }
      NvmlSource s = sbe ? (vol ? NvmlSource::kEccSbeVolatile : NvmlSource::kEccSbeAggregate)
                         : (vol ? NvmlSource::kEccDbeVolatile : NvmlSource::kEccDbeAggregate);
      slot(s) = static_cast<double>(n);
      return;
    }
    case Call::kRetiredSbe:
    case Call::kRetiredDbe: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetRetiredPages))) return;
      bool sbe = call == Call::kRetiredSbe;
      unsigned count = 0;  // a zero-sized query answers with the count
      nvmlReturn_t rc = a.DeviceGetRetiredPages(
          h, sbe ? NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS : NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
          &count, nullptr);
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
      if (Check(call, rc, stats)) slot(sbe ? NvmlSource::kRetiredSbe : NvmlSource::kRetiredDbe) = count;
      return;
    }
    case Call::kRetiredPending: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetRetiredPagesPendingStatus))) return;
      int pending = 0;
      if (Check(call, a.DeviceGetRetiredPagesPendingStatus(h, &pending), stats)) {
        slot(NvmlSource::kRetiredPending) = pending == NVML_FEATURE_ENABLED ? 1 : 0;
      }
      return;
    }
    case Call::kRemappedRows: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetRemappedRows))) return;
      unsigned corr = 0, unc = 0, pending = 0, failed = 0;
      if (!Check(call, a.DeviceGetRemappedRows(h, &corr, &unc, &pending, &failed), stats)) return;
      slot(NvmlSource::kRemappedCorrectable) = corr;
      slot(NvmlSource::kRemappedUncorrectable) = unc;
      slot(NvmlSource::kRowRemapFailure) = failed != 0 ? 1 : 0;
      return;
    }
    case Call::kXidEvents:
      slot(NvmlSource::kLastXid) = last_xid_;
      return;  // the per-code counts are copied by Read
    case Call::kFieldPowerInstant:
    case Call::kFieldMemoryTemp:
    case Call::kCount:
      return;
  }
}

}  // namespace gpulse::nvml
