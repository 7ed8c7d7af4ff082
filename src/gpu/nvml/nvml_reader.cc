#include "gpu/nvml/nvml_reader.h"

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr unsigned kAllLinks = 0xFFFFFFFFu;  // scopeId: NVML sums the counter over every link

// One entry of the batched nvmlDeviceGetFieldValues call.
struct FieldValueCall {
  Call call;
  unsigned field_id;
  unsigned scope_id;
  NvmlSource source;
  double scale;
};

constexpr FieldValueCall kFieldValueCalls[] = {
    {Call::kFieldPowerInstant, NVML_FI_DEV_POWER_INSTANT, 0, NvmlSource::kPowerInstant, 1e-3},
    {Call::kFieldMemoryTemp, NVML_FI_DEV_MEMORY_TEMP, 0, NvmlSource::kMemoryTemperature, 1.0},
    {Call::kFieldNvlinkCrcFlit, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0,
     NvmlSource::kNvlinkCrcFlitErrors, 1.0},
    {Call::kFieldNvlinkCrcData, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0,
     NvmlSource::kNvlinkCrcDataErrors, 1.0},
    {Call::kFieldNvlinkReplay, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0,
     NvmlSource::kNvlinkReplayErrors, 1.0},
    {Call::kFieldNvlinkRecovery, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0,
     NvmlSource::kNvlinkRecoveryErrors, 1.0},
    // TX and RX land in the same source: they are summed (see ReadFieldValues).
    {Call::kFieldNvlinkThroughput, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kAllLinks,
     NvmlSource::kNvlinkThroughput, 1.0},
    {Call::kFieldNvlinkThroughput, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kAllLinks,
     NvmlSource::kNvlinkThroughput, 1.0},
};
constexpr int kMaxFieldValues = static_cast<int>(std::size(kFieldValueCalls));

std::optional<double> ValueOf(const nvmlFieldValue_t& f) {
  const nvmlValue_t& val = f.value;
  switch (f.valueType) {
    case NVML_VALUE_TYPE_DOUBLE:
      return val.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return val.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return static_cast<double>(val.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return static_cast<double>(val.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return static_cast<double>(val.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT:
      return val.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return val.usVal;
    default:
      return std::nullopt;  // an unknown value type is not guessed at
  }
}

}  // namespace

bool IsFieldValueCall(Call call) {
  for (const FieldValueCall& f : kFieldValueCalls) {
    if (f.call == call) return true;
  }
  return false;
}

Call CallFor(NvmlSource s) {
  switch (s) {
    case NvmlSource::kUtilizationGpu:
    case NvmlSource::kUtilizationMemory:
      return Call::kUtilization;
    case NvmlSource::kEncoderUtilization:
      return Call::kEncoder;
    case NvmlSource::kDecoderUtilization:
      return Call::kDecoder;
    case NvmlSource::kMemoryTotal:
    case NvmlSource::kMemoryFree:
    case NvmlSource::kMemoryUsed:
    case NvmlSource::kMemoryReserved:
      return Call::kMemoryV2;
    case NvmlSource::kPowerUsage:
      return Call::kPowerUsage;
    case NvmlSource::kPowerInstant:
      return Call::kFieldPowerInstant;
    case NvmlSource::kTotalEnergy:
      return Call::kEnergy;
    case NvmlSource::kEnforcedPowerLimit:
      return Call::kPowerLimit;
    case NvmlSource::kPowerMgmtLimit:
      return Call::kPowerMgmtLimit;
    case NvmlSource::kPowerMgmtLimitMin:
    case NvmlSource::kPowerMgmtLimitMax:
      return Call::kPowerLimitConstraints;
    case NvmlSource::kPowerMgmtLimitDefault:
      return Call::kPowerDefaultLimit;
    case NvmlSource::kGpuTemperature:
      return Call::kTemperature;
    case NvmlSource::kMemoryTemperature:
      return Call::kFieldMemoryTemp;
    case NvmlSource::kSmClock:
      return Call::kSmClock;
    case NvmlSource::kMemClock:
      return Call::kMemClock;
    case NvmlSource::kAppSmClock:
      return Call::kAppSmClock;
    case NvmlSource::kAppMemClock:
      return Call::kAppMemClock;
    case NvmlSource::kMaxSmClock:
      return Call::kMaxSmClock;
    case NvmlSource::kMaxMemClock:
      return Call::kMaxMemClock;
    case NvmlSource::kMaxVideoClock:
      return Call::kMaxVideoClock;
    case NvmlSource::kPstate:
      return Call::kPstate;
    case NvmlSource::kClocksEventReasons:
      return Call::kClockReasons;
    case NvmlSource::kPcieReplay:
      return Call::kPcieReplay;
    case NvmlSource::kEccSbeVolatile:
      return Call::kEccSbeVolatile;
    case NvmlSource::kEccDbeVolatile:
      return Call::kEccDbeVolatile;
    case NvmlSource::kEccSbeAggregate:
      return Call::kEccSbeAggregate;
    case NvmlSource::kEccDbeAggregate:
      return Call::kEccDbeAggregate;
    case NvmlSource::kRetiredSbe:
      return Call::kRetiredSbe;
    case NvmlSource::kRetiredDbe:
      return Call::kRetiredDbe;
    case NvmlSource::kRetiredPending:
      return Call::kRetiredPending;
    case NvmlSource::kRemappedUncorrectable:
    case NvmlSource::kRemappedCorrectable:
    case NvmlSource::kRowRemapFailure:
      return Call::kRemappedRows;
    case NvmlSource::kLastXid:
      return Call::kXidEvents;
    case NvmlSource::kFanSpeed:
      return Call::kFanSpeed;
    case NvmlSource::kPcieTxThroughput:
      return Call::kPcieTx;
    case NvmlSource::kPcieRxThroughput:
      return Call::kPcieRx;
    case NvmlSource::kPcieMaxLinkGen:
      return Call::kPcieMaxLinkGen;
    case NvmlSource::kPcieMaxLinkWidth:
      return Call::kPcieMaxLinkWidth;
    case NvmlSource::kPcieLinkGen:
      return Call::kPcieLinkGen;
    case NvmlSource::kPcieLinkWidth:
      return Call::kPcieLinkWidth;
    case NvmlSource::kViolationPower:
      return Call::kViolationPower;
    case NvmlSource::kViolationThermal:
      return Call::kViolationThermal;
    case NvmlSource::kViolationSyncBoost:
      return Call::kViolationSyncBoost;
    case NvmlSource::kViolationBoardLimit:
      return Call::kViolationBoardLimit;
    case NvmlSource::kViolationLowUtil:
      return Call::kViolationLowUtil;
    case NvmlSource::kViolationReliability:
      return Call::kViolationReliability;
    case NvmlSource::kNvlinkCrcFlitErrors:
      return Call::kFieldNvlinkCrcFlit;
    case NvmlSource::kNvlinkCrcDataErrors:
      return Call::kFieldNvlinkCrcData;
    case NvmlSource::kNvlinkReplayErrors:
      return Call::kFieldNvlinkReplay;
    case NvmlSource::kNvlinkRecoveryErrors:
      return Call::kFieldNvlinkRecovery;
    case NvmlSource::kNvlinkThroughput:
      return Call::kFieldNvlinkThroughput;
    case NvmlSource::kInforomValid:
      return Call::kInforom;
    case NvmlSource::kGpm:
      return Call::kGpm;
    case NvmlSource::kSourceCount:
      break;
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
    if (call != Call::kMemoryV2 && call != Call::kMemoryV1 && call != Call::kGpm) {
      r.MarkUnsupported(call);
    }
  }
  return r;
}

void DeviceReader::AttachGpm(nvmlDevice_t parent, std::optional<unsigned> gpu_instance_id) {
  gpm_ = std::make_unique<GpmReader>(api_, parent, gpu_instance_id);
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
  out.profiling_stuck = false;
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
  if (wanted[kV2] && unsupported(Call::kMemoryV2))
    wanted.set(static_cast<unsigned>(Call::kMemoryV1));
  wanted &= ~unsupported_;

  Values v;
  const bool gpm_wanted = wanted[static_cast<unsigned>(Call::kGpm)] && gpm_ != nullptr;
  // The stuck-at-zero check compares GPM with NVML's utilization, so GPM reads it too.
  if (gpm_wanted && !unsupported(Call::kUtilization))
    wanted.set(static_cast<unsigned>(Call::kUtilization));
  ReadFieldValues(wanted, v, out.t_mono_ns, stats);
  for (unsigned c = 0; c < static_cast<unsigned>(Call::kCount) && !lost_; ++c) {
    auto call = static_cast<Call>(c);
    if (wanted[c] && !IsFieldValueCall(call)) Perform(call, v, stats);
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
    if (source == NvmlSource::kGpm) continue;
    out.values[f] = v[static_cast<unsigned>(source)];
    if (!out.values[f] && SourceUnsupported(source)) out.unsupported[f] = true;
  }
  if (gpm_wanted) {
    gpm_->Read(fields, out.t_mono_ns, v[static_cast<unsigned>(NvmlSource::kUtilizationGpu)], out,
               stats);
    if (gpm_->lost()) {
      lost_ = true;
      out.values.assign(AllFields().size(), std::nullopt);
      out.state = DeviceState::kLost;
      if (xid_wanted && !unsupported(Call::kXidEvents)) CopyXidCounts(out);
      return;
    }
    out.profiling_stuck = gpm_->stuck();
  } else if (wanted[static_cast<unsigned>(Call::kGpm)] || unsupported(Call::kGpm)) {
    for (FieldIndex f : fields) {
      if (FieldAt(f).nvml == NvmlSource::kGpm) out.unsupported[f] = true;
    }
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
    v[static_cast<unsigned>(NvmlSource::kMemoryUsed)] =
        m.used / kMiB;  // v1 counts reserved as used
  }
}

void DeviceReader::ReadFieldValues(const std::bitset<static_cast<unsigned>(Call::kCount)>& wanted,
                                   Values& v, std::int64_t now_ns, gpu::ReadStats& stats) {
  const FieldValueCall* asked[kMaxFieldValues];
  nvmlFieldValue_t values[kMaxFieldValues]{};
  int n = 0;
  for (const FieldValueCall& f : kFieldValueCalls) {
    if (!wanted[static_cast<unsigned>(f.call)]) continue;
    if (api_->DeviceGetFieldValues == nullptr) {
      MarkUnsupported(f.call);
      continue;
    }
    asked[n] = &f;
    values[n].fieldId = f.field_id;
    values[n].scopeId = f.scope_id;
    ++n;
  }
  if (n == 0) return;
  nvmlReturn_t rc = api_->DeviceGetFieldValues(handle_, n, values);
  if (Classify(rc) != ErrorClass::kOk) {
    for (int i = 0; i < n && !lost_; ++i) {
      if (i > 0 && asked[i]->call == asked[i - 1]->call) continue;  // TX and RX are one call's
      Check(asked[i]->call, rc, stats);
    }
    return;
  }
  std::optional<double> nvlink_kib = 0.0;  // TX + RX; absent when either is
  bool nvlink_asked = false;
  for (int i = 0; i < n; ++i) {
    const FieldValueCall& f = *asked[i];
    const bool ok = Check(f.call, values[i].nvmlReturn, stats);
    std::optional<double> x = ok ? ValueOf(values[i]) : std::nullopt;
    if (ok && !x) ++stats.failed_calls;
    if (f.source == NvmlSource::kNvlinkThroughput) {
      nvlink_asked = true;
      nvlink_kib = x && nvlink_kib ? std::optional<double>(*nvlink_kib + *x) : std::nullopt;
      continue;
    }
    if (x) v[static_cast<unsigned>(f.source)] = *x * f.scale;
  }
  if (nvlink_asked) {
    v[static_cast<unsigned>(NvmlSource::kNvlinkThroughput)] =
        nvlink_kib ? NvlinkRate(*nvlink_kib, now_ns) : std::nullopt;
    if (!nvlink_kib) nvlink_kib_.reset();
  }
}

std::optional<double> DeviceReader::NvlinkRate(double kib, std::int64_t now_ns) {
  std::optional<double> rate;
  if (nvlink_kib_ && now_ns > nvlink_ns_ && kib >= *nvlink_kib_) {
    const double seconds = static_cast<double>(now_ns - nvlink_ns_) / 1e9;
    rate = (kib - *nvlink_kib_) * 1024.0 / 1e6 / seconds;
  }
  nvlink_kib_ = kib;  // a counter that went back (driver reload) starts over: no rate this read
  nvlink_ns_ = now_ns;
  return rate;
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
      auto fn =
          call == Call::kEncoder ? a.DeviceGetEncoderUtilization : a.DeviceGetDecoderUtilization;
      if (absent_fn(reinterpret_cast<const void*>(fn))) return;
      unsigned util = 0, period = 0;
      if (!Check(call, fn(h, &util, &period), stats)) return;
      slot(call == Call::kEncoder ? NvmlSource::kEncoderUtilization
                                  : NvmlSource::kDecoderUtilization) = util;
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
      slot(call == Call::kPowerUsage ? NvmlSource::kPowerUsage : NvmlSource::kEnforcedPowerLimit) =
          mw / 1000.0;
      return;
    }
    case Call::kPowerMgmtLimit:
    case Call::kPowerDefaultLimit: {
      auto fn = call == Call::kPowerMgmtLimit ? a.DeviceGetPowerManagementLimit
                                              : a.DeviceGetPowerManagementDefaultLimit;
      if (absent_fn(reinterpret_cast<const void*>(fn))) return;
      unsigned mw = 0;
      if (!Check(call, fn(h, &mw), stats)) return;
      slot(call == Call::kPowerMgmtLimit ? NvmlSource::kPowerMgmtLimit
                                         : NvmlSource::kPowerMgmtLimitDefault) = mw / 1000.0;
      return;
    }
    case Call::kPowerLimitConstraints: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetPowerManagementLimitConstraints)))
        return;
      unsigned min_mw = 0, max_mw = 0;
      if (!Check(call, a.DeviceGetPowerManagementLimitConstraints(h, &min_mw, &max_mw), stats))
        return;
      slot(NvmlSource::kPowerMgmtLimitMin) = min_mw / 1000.0;
      slot(NvmlSource::kPowerMgmtLimitMax) = max_mw / 1000.0;
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
    case Call::kAppSmClock:
    case Call::kAppMemClock: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetApplicationsClock))) return;
      const bool sm = call == Call::kAppSmClock;
      unsigned mhz = 0;
      // DCGM reads the SM application clock as the graphics one (the two are one clock).
      if (Check(call,
                a.DeviceGetApplicationsClock(h, sm ? NVML_CLOCK_GRAPHICS : NVML_CLOCK_MEM, &mhz),
                stats)) {
        slot(sm ? NvmlSource::kAppSmClock : NvmlSource::kAppMemClock) = mhz;
      }
      return;
    }
    case Call::kMaxSmClock:
    case Call::kMaxMemClock:
    case Call::kMaxVideoClock: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetMaxClockInfo))) return;
      const int type = call == Call::kMaxSmClock    ? NVML_CLOCK_SM
                       : call == Call::kMaxMemClock ? NVML_CLOCK_MEM
                                                    : NVML_CLOCK_VIDEO;
      unsigned mhz = 0;
      if (Check(call, a.DeviceGetMaxClockInfo(h, type, &mhz), stats)) {
        slot(call == Call::kMaxSmClock    ? NvmlSource::kMaxSmClock
             : call == Call::kMaxMemClock ? NvmlSource::kMaxMemClock
                                          : NvmlSource::kMaxVideoClock) = mhz;
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
      if (Check(call, a.DeviceGetPcieReplayCounter(h, &n), stats))
        slot(NvmlSource::kPcieReplay) = n;
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
      if (!Check(call,
                 a.DeviceGetTotalEccErrors(
                     h, sbe ? NVML_MEMORY_ERROR_TYPE_CORRECTED : NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
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
      nvmlReturn_t rc =
          a.DeviceGetRetiredPages(h,
                                  sbe ? NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
                                      : NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
                                  &count, nullptr);
      if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
      if (Check(call, rc, stats))
        slot(sbe ? NvmlSource::kRetiredSbe : NvmlSource::kRetiredDbe) = count;
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
    case Call::kInforom: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceValidateInforom))) return;
      // A corrupt InfoROM is the reading (0), not a failed call.
      const nvmlReturn_t rc = a.DeviceValidateInforom(h);
      if (rc == NVML_ERROR_CORRUPTED_INFOROM) {
        slot(NvmlSource::kInforomValid) = 0;
      } else if (Check(call, rc, stats)) {
        slot(NvmlSource::kInforomValid) = 1;
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
    case Call::kFanSpeed: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetFanSpeed))) return;
      unsigned percent = 0;
      if (Check(call, a.DeviceGetFanSpeed(h, &percent), stats))
        slot(NvmlSource::kFanSpeed) = percent;
      return;
    }
    case Call::kPcieTx:
    case Call::kPcieRx: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetPcieThroughput))) return;
      const bool tx = call == Call::kPcieTx;
      unsigned kb = 0;
      if (Check(call,
                a.DeviceGetPcieThroughput(h, tx ? NVML_PCIE_UTIL_TX_BYTES : NVML_PCIE_UTIL_RX_BYTES,
                                          &kb),
                stats)) {
        slot(tx ? NvmlSource::kPcieTxThroughput : NvmlSource::kPcieRxThroughput) = kb;
      }
      return;
    }
    case Call::kPcieMaxLinkGen:
    case Call::kPcieMaxLinkWidth:
    case Call::kPcieLinkGen:
    case Call::kPcieLinkWidth: {
      decltype(a.DeviceGetMaxPcieLinkGeneration) fn = nullptr;
      NvmlSource source = NvmlSource::kPcieMaxLinkGen;
      switch (call) {
        case Call::kPcieMaxLinkGen:
          fn = a.DeviceGetMaxPcieLinkGeneration;
          break;
        case Call::kPcieMaxLinkWidth:
          fn = a.DeviceGetMaxPcieLinkWidth;
          source = NvmlSource::kPcieMaxLinkWidth;
          break;
        case Call::kPcieLinkGen:
          fn = a.DeviceGetCurrPcieLinkGeneration;
          source = NvmlSource::kPcieLinkGen;
          break;
        default:
          fn = a.DeviceGetCurrPcieLinkWidth;
          source = NvmlSource::kPcieLinkWidth;
          break;
      }
      if (absent_fn(reinterpret_cast<const void*>(fn))) return;
      unsigned n = 0;
      if (Check(call, fn(h, &n), stats)) slot(source) = n;
      return;
    }
    case Call::kViolationPower:
    case Call::kViolationThermal:
    case Call::kViolationSyncBoost:
    case Call::kViolationBoardLimit:
    case Call::kViolationLowUtil:
    case Call::kViolationReliability: {
      if (absent_fn(reinterpret_cast<const void*>(a.DeviceGetViolationStatus))) return;
      const int policy = static_cast<int>(call) - static_cast<int>(Call::kViolationPower);
      static_assert(static_cast<int>(Call::kViolationReliability) -
                        static_cast<int>(Call::kViolationPower) ==
                    NVML_PERF_POLICY_RELIABILITY);
      nvmlViolationTime_t t{};
      if (Check(call, a.DeviceGetViolationStatus(h, policy, &t), stats)) {
        slot(static_cast<NvmlSource>(static_cast<int>(NvmlSource::kViolationPower) + policy)) =
            static_cast<double>(t.violationTime);
      }
      return;
    }
    case Call::kFieldPowerInstant:
    case Call::kFieldMemoryTemp:
    case Call::kFieldNvlinkCrcFlit:
    case Call::kFieldNvlinkCrcData:
    case Call::kFieldNvlinkReplay:
    case Call::kFieldNvlinkRecovery:
    case Call::kFieldNvlinkThroughput:
    case Call::kGpm:
    case Call::kCount:
      return;
  }
}

}  // namespace gpulse::nvml
