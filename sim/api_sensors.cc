// Live readings: utilization, power, energy, limits, temperature, fan, clocks, performance state,
// clock event reasons and violation timers. Values come from the device's time model and fault
// state at the call's t (see time_model.h, fault_state.h).
#include <cmath>

#include "api_common.h"

using gpulse::sim::Call;
using gpulse::sim::DeviceCtx;
using gpulse::sim::OnDevice;

namespace {

constexpr unsigned kCodecSamplingPeriodUs = 167'000;  // what real encoders/decoders report

nvmlReturn_t CodecUtil(nvmlDevice_t device, unsigned* util, unsigned* period, Call call) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (util == nullptr || period == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(call); r != NVML_SUCCESS) return r;
    *util = call == Call::kEncoderUtilization ? c.model().EncUtil(c.t) : c.model().DecUtil(c.t);
    *period = kCodecSamplingPeriodUs;
    return NVML_SUCCESS;
  });
}

// Runs `get` after the null-pointer and NOT_SUPPORTED checks; for the one-value getters.
template <typename T, typename Get>
nvmlReturn_t Scalar(nvmlDevice_t device, T* out, Call call, Get&& get) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(call); r != NVML_SUCCESS) return r;
    *out = get(c);
    return NVML_SUCCESS;
  });
}

// The limit nvmlDeviceSetPowerManagementLimit last set (the scenario's power_limit_w until then).
unsigned LimitMw(const DeviceCtx& c) { return c.session.settings(c.index()).power_limit_mw; }

bool ValidClock(int type) { return type >= NVML_CLOCK_GRAPHICS && type <= NVML_CLOCK_VIDEO; }

bool ValidPerfPolicy(int policy) {
  return policy >= NVML_PERF_POLICY_POWER && policy <= NVML_PERF_POLICY_RELIABILITY;
}

// The throttle reasons whose time a violation policy counts; 0 for the policies no fault kind
// can cause (low utilization, reliability), whose timers therefore stay at 0.
unsigned long long PolicyReasons(int policy) {
  switch (policy) {
    case NVML_PERF_POLICY_POWER:
      return nvmlClocksEventReasonSwPowerCap | nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
    case NVML_PERF_POLICY_THERMAL:
      return nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown;
    case NVML_PERF_POLICY_SYNC_BOOST:
      return nvmlClocksEventReasonSyncBoost;
    case NVML_PERF_POLICY_BOARD_LIMIT:
      return nvmlClocksThrottleReasonHwSlowdown;
    default:
      return 0;
  }
}

}  // namespace

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                             nvmlUtilization_t* util) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (util == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    c.sim.Count(gpulse::sim::Simulator::kUtilizationCalls);
    if (nvmlReturn_t r = c.Gate(Call::kUtilization); r != NVML_SUCCESS) return r;
    util->gpu = c.model().GpuUtil(c.t);
    util->memory = c.model().MemUtil(c.t);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned* util,
                                                               unsigned* sampling_period_us) {
  return CodecUtil(device, util, sampling_period_us, Call::kEncoderUtilization);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned* util,
                                                               unsigned* sampling_period_us) {
  return CodecUtil(device, util, sampling_period_us, Call::kDecoderUtilization);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned* mw) {
  return Scalar(device, mw, Call::kPowerUsage,
                [](const DeviceCtx& c) { return c.model().PowerUsageMw(c.t); });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                   unsigned long long* mj) {
  return Scalar(device, mj, Call::kTotalEnergy,
                [](const DeviceCtx& c) { return c.model().EnergyCounterMj(c.t); });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned* mw) {
  return Scalar(device, mw, Call::kEnforcedPowerLimit, LimitMw);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                                 unsigned* mw) {
  return Scalar(device, mw, Call::kPowerManagementLimit, LimitMw);
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensor,
                                                        unsigned* celsius) {
  if (sensor != NVML_TEMPERATURE_GPU) {
    return OnDevice(device, [](DeviceCtx&) -> nvmlReturn_t { return NVML_ERROR_INVALID_ARGUMENT; });
  }
  return Scalar(device, celsius, Call::kTemperature,
                [](const DeviceCtx& c) { return c.model().TempC(c.t); });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type,
                                                      unsigned* mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mhz == nullptr || !ValidClock(type)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kClocks); r != NVML_SUCCESS) return r;
    const bool throttled = c.session.faults().ThrottleReasons(c.index(), c.t) != 0;
    *mhz = c.model().ClockMhz(type, c.t, throttled);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type,
                                                         unsigned* mhz) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (mhz == nullptr || !ValidClock(type)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kMaxClocks); r != NVML_SUCCESS) return r;
    *mhz = c.model().MaxClockMhz(type);
    return NVML_SUCCESS;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, int* pstate) {
  return Scalar(device, pstate, Call::kPstate,
                [](const DeviceCtx& c) { return c.model().Pstate(c.t); });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                      unsigned long long* mask) {
  return Scalar(device, mask, Call::kClocksEventReasons, [](const DeviceCtx& c) {
    unsigned long long reasons = c.session.faults().ThrottleReasons(c.index(), c.t);
    if (!c.model().Busy(c.t)) reasons |= nvmlClocksEventReasonGpuIdle;
    return reasons;
  });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned* percent) {
  return Scalar(device, percent, Call::kFanSpeed,
                [](const DeviceCtx& c) { return c.model().FanPercent(c.t); });
}

GPULSE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, int policy,
                                                            nvmlViolationTime_t* time) {
  return OnDevice(device, [&](DeviceCtx& c) -> nvmlReturn_t {
    if (time == nullptr || !ValidPerfPolicy(policy)) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t r = c.Gate(Call::kViolationStatus); r != NVML_SUCCESS) return r;
    const unsigned long long reasons = PolicyReasons(policy);
    const double seconds =
        reasons == 0 ? 0.0 : c.session.faults().ThrottledSeconds(c.index(), reasons, c.t);
    time->referenceTime = static_cast<unsigned long long>(c.sim.UnixMicros(c.t));
    time->violationTime = static_cast<unsigned long long>(std::llround(seconds * 1e9));
    return NVML_SUCCESS;
  });
}
