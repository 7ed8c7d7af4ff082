#include "time_model.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "activity.h"
#include "gpu/nvml/nvml_abi.h"
#include "identity.h"

namespace gpulse::sim {
namespace {

constexpr double kTwoPi = 2 * std::numbers::pi;
constexpr double kPowerWobble = 0.02;  // ±2 % of (power − idle)
constexpr double kPowerPeriodS = 7.0;
constexpr double kOmega = kTwoPi / kPowerPeriodS;
constexpr double kUtilWobble = 1.5;  // percentage points, busy only
constexpr double kMemUtilWobble = 1.0;
constexpr double kBusyUtil = 5.0;  // above this a GPU counts as busy
constexpr double kThrottleFactor = 0.7;
constexpr double kTempWindowS = 5.0;
// nvmlDeviceGetFanSpeed: the fan idles at 30 % and spins up linearly with the temperature.
constexpr double kFanIdlePercent = 30.0;
constexpr double kFanSpanPercent = 70.0;
constexpr double kKbPerMb = 1e3;  // NVML's PCIe KB are 10^3 bytes

double Phase(const std::string& scenario, unsigned index, const char* what) {
  uint64_t h = StableHash(scenario + "/" + what + "/" + std::to_string(index));
  return kTwoPi * static_cast<double>(h >> 11) / static_cast<double>(uint64_t{1} << 53);
}

}  // namespace

DeviceModel::DeviceModel(const DeviceSpec& spec, const std::string& scenario, unsigned index)
    : spec_(spec),
      power_(spec.load.power_w),
      util_(spec.load.util),
      mem_util_(spec.load.mem_util),
      enc_util_(spec.load.enc_util),
      dec_util_(spec.load.dec_util),
      mem_used_(spec.load.mem_used_mib),
      sm_active_(spec.load.sm_active),
      sm_occupancy_(spec.load.sm_occupancy),
      tensor_(spec.load.tensor),
      dram_(spec.load.dram),
      fp64_(spec.load.fp64),
      fp32_(spec.load.fp32),
      fp16_(spec.load.fp16),
      int_util_(spec.load.int_util),
      pcie_tx_(spec.load.pcie_tx_mb_s),
      pcie_rx_(spec.load.pcie_rx_mb_s),
      nvlink_tx_(spec.load.nvlink_tx_mb_s),
      nvlink_rx_(spec.load.nvlink_rx_mb_s),
      wobble_(spec.wobble ? kPowerWobble : 0.0),
      phase_power_(Phase(scenario, index, "power")),
      phase_util_(Phase(scenario, index, "util")),
      phase_mem_(Phase(scenario, index, "mem")) {
  const double p = spec.load.repeat_s;
  if (p > 0) {
    period_energy_ = power_.Integral(p);
    period_sin_ = power_.SinIntegralAbove(p, spec.idle_power_w, kOmega, phase_power_);
    period_cos_ = power_.SinIntegralAbove(p, spec.idle_power_w, kOmega, phase_power_ + kTwoPi / 4);
    period_nvlink_tx_ = nvlink_tx_.Integral(p);
    period_nvlink_rx_ = nvlink_rx_.Integral(p);
  }
}

double DeviceModel::Wrap(double t) const {
  const double p = spec_.load.repeat_s;
  return p > 0 ? t - std::floor(t / p) * p : t;
}

double DeviceModel::PowerW(double t) const {
  t = std::max(t, 0.0);
  const double base = power_.At(Wrap(t));
  // Only above idle: below it the wobble could take a keyframe near 0 W under zero, and the energy
  // counter backwards (found by the scenario fuzz target).
  const double above = std::max(base - spec_.idle_power_w, 0.0);
  return base + wobble_ * above * std::sin(kOmega * t + phase_power_);
}

double DeviceModel::EnergyJ(double t) const {
  if (t <= 0) return 0;
  const double idle = spec_.idle_power_w;
  const double p = spec_.load.repeat_s;
  if (p <= 0)
    return power_.Integral(t) + wobble_ * power_.SinIntegralAbove(t, idle, kOmega, phase_power_);
  // Whole loops: the keyframe part repeats exactly; the wobble part of loop j is the first loop's
  // rotated by j·ω·p, summed in closed form.
  const double n = std::floor(t / p);
  const double r = t - n * p;
  const double theta = kOmega * p;
  const TrigSums sums = SumOfRotations(n, theta);
  const double loops =
      n * period_energy_ + wobble_ * (period_sin_ * sums.cos_sum + period_cos_ * sums.sin_sum);
  const double rest = power_.Integral(r) +
                      wobble_ * power_.SinIntegralAbove(r, idle, kOmega, phase_power_ + n * theta);
  return loops + rest;
}

unsigned long long DeviceModel::EnergyCounterMj(double t) const {
  const auto offset_mj = static_cast<unsigned long long>(spec_.energy_offset_j * 1000.0);
  const double u = spec_.energy_update_s;
  const double shown = u > 0 ? std::floor(t / u) * u : t;  // the counter's last update
  return offset_mj +
         static_cast<unsigned long long>(std::floor(std::max(EnergyJ(shown), 0.0) * 1000.0));
}

double DeviceModel::AveragePowerW(double t, double window_s) const {
  const double w = std::min(window_s, t);
  if (w <= 1e-9) return PowerW(t);
  return (EnergyJ(t) - EnergyJ(t - w)) / w;
}

unsigned DeviceModel::PowerAverageMw(double t) const {
  return static_cast<unsigned>(std::lround(std::max(0.0, AveragePowerW(t, 1.0)) * 1000.0));
}

unsigned DeviceModel::PowerInstantMw(double t) const {
  return static_cast<unsigned>(std::lround(std::max(0.0, PowerW(t)) * 1000.0));
}

unsigned DeviceModel::PowerUsageMw(double t) const {
  if (spec_.power_usage == PowerUsageMode::kAverage) return PowerAverageMw(t);
  return PowerInstantMw(t);
}

bool DeviceModel::Busy(double t) const { return util_.At(Wrap(t)) > kBusyUtil; }

unsigned DeviceModel::Percent(const PiecewiseLinear& ch, double t, double wobble_amp, double period,
                              double phase) const {
  double v = ch.At(Wrap(t));
  if (spec_.wobble && Busy(t)) v += wobble_amp * std::sin(kTwoPi * t / period + phase);
  return static_cast<unsigned>(std::clamp(std::lround(v), 0L, 100L));
}

unsigned DeviceModel::GpuUtil(double t) const {
  return Percent(util_, t, kUtilWobble, 3.1, phase_util_);
}
unsigned DeviceModel::MemUtil(double t) const {
  return Percent(mem_util_, t, kMemUtilWobble, 4.3, phase_mem_);
}
unsigned DeviceModel::EncUtil(double t) const { return Percent(enc_util_, t, 0, 1, 0); }
unsigned DeviceModel::DecUtil(double t) const { return Percent(dec_util_, t, 0, 1, 0); }

uint64_t DeviceModel::TotalBytes() const { return spec_.memory_total_mib << 20; }
uint64_t DeviceModel::ReservedBytes() const { return spec_.memory_reserved_mib << 20; }
uint64_t DeviceModel::UsedBytes(double t) const {
  const double mib = std::max(0.0, mem_used_.At(Wrap(t)));
  return std::min(static_cast<uint64_t>(std::llround(mib * 1048576.0)),
                  TotalBytes() - ReservedBytes());
}

double DeviceModel::NormalizedLoad(double t) const {
  const double span = spec_.power_limit_w - spec_.idle_power_w;
  if (span <= 0) return 0;
  // Before t = 0 the GPU idled, so a fresh start warms up over the window instead of jumping.
  const double before_start = std::max(0.0, kTempWindowS - t);
  const double energy =
      EnergyJ(t) - EnergyJ(std::max(0.0, t - kTempWindowS)) + spec_.idle_power_w * before_start;
  const double mean = energy / kTempWindowS;
  return std::clamp((mean - spec_.idle_power_w) / span, 0.0, 1.0);
}

unsigned DeviceModel::TempC(double t) const {
  const double c = spec_.idle_temp_c + (spec_.max_temp_c - spec_.idle_temp_c) * NormalizedLoad(t);
  return static_cast<unsigned>(std::max(0L, std::lround(c)));
}

unsigned DeviceModel::MemTempC(double t) const {
  // HBM sits next to the die and runs a little hotter, more so under load.
  const double c = spec_.idle_temp_c + (spec_.max_temp_c - spec_.idle_temp_c) * NormalizedLoad(t) +
                   2.0 + 4.0 * NormalizedLoad(t);
  return static_cast<unsigned>(std::max(0L, std::lround(c)));
}

unsigned DeviceModel::MaxClockMhz(int type) const {
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      return spec_.max_sm_clock_mhz;
    case NVML_CLOCK_MEM:
      return spec_.max_mem_clock_mhz;
    default:  // video
      return spec_.max_video_clock_mhz;
  }
}

unsigned DeviceModel::ClockMhz(int type, double t, bool throttled) const {
  const bool busy = Busy(t);
  switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
      if (!busy) return spec_.idle_sm_clock_mhz;
      return throttled
                 ? static_cast<unsigned>(std::lround(kThrottleFactor * spec_.max_sm_clock_mhz))
                 : spec_.max_sm_clock_mhz;
    case NVML_CLOCK_MEM:
      return busy ? spec_.max_mem_clock_mhz : spec_.idle_mem_clock_mhz;
    default:  // video
      return busy ? MaxClockMhz(NVML_CLOCK_VIDEO) : spec_.idle_sm_clock_mhz;
  }
}

int DeviceModel::Pstate(double t) const { return Busy(t) ? 0 : 8; }

LoadLevels DeviceModel::Levels(double t) const {
  const double s = Wrap(std::max(t, 0.0));
  LoadLevels l;
  l.util = util_.At(s);
  l.mem_util = mem_util_.At(s);
  l.dec_util = dec_util_.At(s);
  l.sm_active = sm_active_.At(s);
  l.sm_occupancy = sm_occupancy_.At(s);
  l.tensor = tensor_.At(s);
  l.dram = dram_.At(s);
  l.fp64 = fp64_.At(s);
  l.fp32 = fp32_.At(s);
  l.fp16 = fp16_.At(s);
  l.integer = int_util_.At(s);
  l.pcie_tx_mb_s = pcie_tx_.At(s);
  l.pcie_rx_mb_s = pcie_rx_.At(s);
  l.nvlink_tx_mb_s = nvlink_tx_.At(s);
  l.nvlink_rx_mb_s = nvlink_rx_.At(s);
  return l;
}

unsigned DeviceModel::PcieKbPerSec(bool tx, double t) const {
  const double mb_s = (tx ? pcie_tx_ : pcie_rx_).At(Wrap(std::max(t, 0.0)));
  return static_cast<unsigned>(std::lround(std::max(0.0, mb_s) * kKbPerMb));
}

double DeviceModel::LoopedIntegral(const PiecewiseLinear& ch, double per_loop, double t) const {
  if (t <= 0) return 0;
  const double p = spec_.load.repeat_s;
  if (p <= 0) return ch.Integral(t);
  const double n = std::floor(t / p);
  return n * per_loop + ch.Integral(t - n * p);
}

double DeviceModel::NvlinkBytes(bool tx, double t) const {
  const double mb = tx ? LoopedIntegral(nvlink_tx_, period_nvlink_tx_, t)
                       : LoopedIntegral(nvlink_rx_, period_nvlink_rx_, t);
  return mb * kBytesPerMb;
}

unsigned DeviceModel::FanPercent(double t) const {
  // From the reported (rounded) temperature, so a reader can check one against the other.
  const double span = spec_.max_temp_c - spec_.idle_temp_c;
  const double rise = span > 0 ? (TempC(t) - spec_.idle_temp_c) / span : 0.0;
  const double percent = kFanIdlePercent + kFanSpanPercent * rise;
  return static_cast<unsigned>(std::clamp(std::lround(percent), 0L, 100L));
}

}  // namespace gpulse::sim
