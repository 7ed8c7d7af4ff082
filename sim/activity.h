// The activity model behind the profiling readings (GPM metrics, PCIe throughput, NVLink traffic),
// in one place: the defaults of the activity load channels, and the formulas that turn a device's
// (or a MIG instance's) load into NVML_GPM_METRIC_* values. sim/README.md ("Profiling readings")
// documents every constant here; change both together.
//
// The values are pure functions of the load at one instant, without wobble, so a test with a
// frozen clock knows them exactly.
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <optional>

#include "scenario.h"

namespace gpulse::sim {

// Defaults of the activity channels a scenario does not set: a multiple of another channel.
inline constexpr double kSmActivePerUtil = 0.9;
inline constexpr double kSmOccupancyPerUtil = 0.45;
inline constexpr double kTensorPerUtil = 0.6;
inline constexpr double kDramPerMemUtil = 1.0;
inline constexpr double kFp64PerUtil = 0.05;
inline constexpr double kFp32PerUtil = 0.3;
inline constexpr double kFp16PerUtil = 0.2;
inline constexpr double kIntPerUtil = 0.1;
inline constexpr double kPcieTxMbSPerUtil = 2.0;  // MB/s per percent of util
inline constexpr double kPcieRxMbSPerUtil = 4.0;
inline constexpr double kNvlinkMbSPerUtil = 500.0;  // each direction, all links together

// How the tensor activity splits between the pipes (they add up to the tensor activity).
inline constexpr double kHmmaPerTensor = 0.8;
inline constexpr double kImmaPerTensor = 0.15;
inline constexpr double kDfmaPerTensor = 0.05;

inline constexpr double kBytesPerMb = 1e6;  // the channels' MB are 10^6 bytes
// NVML answers the GPM *_PER_SEC metrics in MiB/s (nvml.h), so the simulator does too.
inline constexpr double kBytesPerMib = 1048576.0;
// What the `out_of_range` gpm fault reports: impossible percentages and rates.
inline constexpr double kOutOfRangePercent = 250.0;
inline constexpr double kOutOfRangeRate = -1.0;
// Decoder/JPEG engines a GPU has (NVDEC_0..6, NVJPG_0..6) and optical-flow engines (NVOFA_0).
inline constexpr unsigned kCodecEngines = 7;
inline constexpr unsigned kOfaEngines = 1;

// `channel` defaults to `factor` × `source` when no keyframe sets it (every point scaled, so the
// default is interpolated and looped exactly as its source is).
struct ChannelDefault {
  Channel Load::*channel;
  Channel Load::*source;
  double factor;
};
inline constexpr std::array<ChannelDefault, 12> kChannelDefaults = {{
    {&Load::sm_active, &Load::util, kSmActivePerUtil},
    {&Load::sm_occupancy, &Load::util, kSmOccupancyPerUtil},
    {&Load::tensor, &Load::util, kTensorPerUtil},
    {&Load::dram, &Load::mem_util, kDramPerMemUtil},
    {&Load::fp64, &Load::util, kFp64PerUtil},
    {&Load::fp32, &Load::util, kFp32PerUtil},
    {&Load::fp16, &Load::util, kFp16PerUtil},
    {&Load::int_util, &Load::util, kIntPerUtil},
    {&Load::pcie_tx_mb_s, &Load::util, kPcieTxMbSPerUtil},
    {&Load::pcie_rx_mb_s, &Load::util, kPcieRxMbSPerUtil},
    {&Load::nvlink_tx_mb_s, &Load::util, kNvlinkMbSPerUtil},
    {&Load::nvlink_rx_mb_s, &Load::util, kNvlinkMbSPerUtil},
}};

// Fills every channel of kChannelDefaults that has no keyframes from its source.
void ApplyChannelDefaults(Load& load);

// The load of one GPM scope (a GPU or a MIG instance) at one instant: percentages, and MB/s for
// PCIe and NVLink (all links together).
struct GpmActivity {
  double graphics = 0, sm_active = 0, sm_occupancy = 0, tensor = 0, dram = 0;
  double fp64 = 0, fp32 = 0, fp16 = 0, integer = 0, decoder = 0;
  // A MIG instance has no PCIe or NVLink metrics of its own (they are GPU-level).
  bool gpu_scope = true;
  double pcie_tx_mb_s = 0, pcie_rx_mb_s = 0;
  double nvlink_tx_mb_s = 0, nvlink_rx_mb_s = 0;
  unsigned nvlink_links = 0;
};

// A MIG instance's activity from its own util (percent): the GPU defaults above applied to it;
// `mem_util` and `dec_util` are the parent's (memory bandwidth and decoders are not per instance).
GpmActivity InstanceActivity(double util, double mem_util, double dec_util);

// The value of metric `id` (NVML_GPM_METRIC_*): percent for *_UTIL, bytes per second for
// *_PER_SEC; nullopt (NOT_SUPPORTED) for an unknown id or an engine or link the scope lacks.
std::optional<double> GpmMetricValue(const GpmActivity& a, unsigned id);

// The metric's static names (the id's NVML_GPM_METRIC_ suffix, "SM_UTIL", and a phrase) and unit
// (nvmlGpmMetric_t.metricInfo); nullopt for an unknown id.
struct GpmMetricNames {
  const char* short_name;
  const char* long_name;
  const char* unit;  // "%" or "B/s"
};
std::optional<GpmMetricNames> GpmMetricInfo(unsigned id);

// True for the *_PER_SEC metrics (bytes per second), false for the *_UTIL ones (percent).
bool IsRateMetric(unsigned id);

}  // namespace gpulse::sim
