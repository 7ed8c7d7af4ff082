// What one simulated GPU reads at time t (seconds since the simulator's first nvmlInit_v2): power,
// energy, utilization, memory, temperature, clocks. Every reading is a pure function of t, so
// frozen clocks give reproducible values and readings agree with each other:
//   - power(t) = keyframe power + a wobble of ±2 % of (power − idle power), period 7 s, per-device
//     phase (so an idle GPU does not wobble);
//   - the energy counter is the exact integral of power(t) (closed form, loops included) plus a
//     per-device offset, so energy differences over any interval equal ∫ power dt (with
//     energy_update_ms, as of the counter's last update);
//   - the 1 s average power, and the temperature (which follows the 5 s mean power, counting the
//     time before t = 0 as idle), are derived from that integral, so they lag power as real
//     readings do;
//   - the profiling channels (GPM activity, PCIe and NVLink traffic) are the keyframes as they are,
//     and the NVLink byte counters their exact integral, like energy.
// Units are NVML's: mW, mJ, bytes, MHz, °C, percent.
//
// Thread-safety: immutable after construction; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "piecewise.h"
#include "scenario.h"

namespace gpulse::sim {

// The keyframe values of the load channels at one instant, without wobble: what the profiling
// readings (activity.h) are computed from.
struct LoadLevels {
  double util = 0, mem_util = 0, dec_util = 0;                   // percent
  double sm_active = 0, sm_occupancy = 0, tensor = 0, dram = 0;  // percent
  double fp64 = 0, fp32 = 0, fp16 = 0, integer = 0;              // percent
  double pcie_tx_mb_s = 0, pcie_rx_mb_s = 0;                     // MB/s
  double nvlink_tx_mb_s = 0, nvlink_rx_mb_s = 0;                 // MB/s, all links
};

class DeviceModel {
 public:
  // `spec` must outlive the model. `scenario` and `index` seed the per-device wobble phases.
  DeviceModel(const DeviceSpec& spec, const std::string& scenario, unsigned index);

  const DeviceSpec& spec() const { return spec_; }

  double PowerW(double t) const;            // instantaneous, W
  unsigned PowerInstantMw(double t) const;  // field 186
  double EnergyJ(double t) const;           // ∫_0^t power, without the offset
  // offset + ∫_0^t' power in mJ, t' the counter's last update at or before t (energy_update_ms).
  unsigned long long EnergyCounterMj(double t) const;
  double AveragePowerW(double t, double window_s) const;  // mean over [t − window, t], clamped at 0
  unsigned PowerUsageMw(double t) const;    // nvmlDeviceGetPowerUsage: 1 s average or instant
  unsigned PowerAverageMw(double t) const;  // field 185: 1 s average

  bool Busy(double t) const;  // keyframe util > 5 %
  unsigned GpuUtil(double t) const;
  unsigned MemUtil(double t) const;
  unsigned EncUtil(double t) const;
  unsigned DecUtil(double t) const;

  uint64_t TotalBytes() const;
  uint64_t ReservedBytes() const;
  uint64_t UsedBytes(double t) const;  // excludes reserved

  unsigned TempC(double t) const;
  unsigned MemTempC(double t) const;

  // Clock type as nvmlClockType_t (graphics, SM, memory, video). `throttled`: an injected throttle
  // reason is active, which lowers the graphics/SM clock by 30 % while busy.
  unsigned ClockMhz(int type, double t, bool throttled) const;
  unsigned MaxClockMhz(int type) const;
  int Pstate(double t) const;  // 0 busy, 8 idle

  LoadLevels Levels(double t) const;
  // nvmlDeviceGetPcieThroughput: KB/s (10^3 bytes) transmitted (`tx`) or received.
  unsigned PcieKbPerSec(bool tx, double t) const;
  // Bytes moved over all NVLink links in [0, t], transmitted (`tx`) or received: the exact
  // integral of the NVLink channel.
  double NvlinkBytes(bool tx, double t) const;
  // nvmlDeviceGetFanSpeed: 30 % at idle_temp_c rising to 100 % at max_temp_c.
  unsigned FanPercent(double t) const;

 private:
  double Wrap(double t) const;            // t folded into the keyframe period
  double NormalizedLoad(double t) const;  // 5 s mean power between idle (0) and the limit (1)
  // ∫_0^t ch, loops included, given ∫ ch over one loop.
  double LoopedIntegral(const PiecewiseLinear& ch, double per_loop, double t) const;
  unsigned Percent(const PiecewiseLinear& ch, double t, double wobble_amp, double period,
                   double phase) const;

  const DeviceSpec& spec_;
  PiecewiseLinear power_, util_, mem_util_, enc_util_, dec_util_, mem_used_;
  PiecewiseLinear sm_active_, sm_occupancy_, tensor_, dram_, fp64_, fp32_, fp16_, int_util_;
  PiecewiseLinear pcie_tx_, pcie_rx_, nvlink_tx_, nvlink_rx_;
  double wobble_;  // relative power wobble amplitude, 0 when disabled
  double phase_power_, phase_util_, phase_mem_;
  // Per-loop constants of the energy integral (repeat_s > 0 only).
  double period_energy_ = 0, period_sin_ = 0, period_cos_ = 0;
  double period_nvlink_tx_ = 0, period_nvlink_rx_ = 0;  // MB over one loop
};

}  // namespace gpulse::sim
