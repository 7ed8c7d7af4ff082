// dcgm-exporter's -d/--devices flag, parsed. Thread-safe: a pure function.
#pragma once

#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::exporter {

// dcgm-exporter's -d/--devices: which entities have series. `f` (flex, the default): every GPU, a
// MIG-enabled one's per-instance readings on its instances; `g[:IDS]`: GPUs only (a MIG-enabled GPU
// keeps its whole-GPU readings), all or the listed indices; `i`: MIG GPU instances only.
struct DeviceSelection {
  enum class Kind { kFlex, kGpus, kInstances };
  Kind kind = Kind::kFlex;
  std::vector<unsigned> gpus;  // kGpus: these indices only; empty: every GPU
};

// Parses dcgm-exporter's syntax: "f", "g", "g:0,2", "g:0-3", "i" (indices 0..1023, each kept
// once, in the order first given). An error names what is wrong.
Result<DeviceSelection> ParseDeviceSelection(std::string_view text);

}  // namespace gpulse::exporter
