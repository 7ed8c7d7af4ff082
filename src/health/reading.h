// One GPU's readings at one tick, as health watches and policies see them: the fields they need,
// taken out of a Sample. Every reading is optional: a field the tick did not read, or that the GPU
// does not give, is absent and judged by nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/device.h"
#include "core/fields.h"

namespace gpulse::health {

struct GpuReading {
  std::int64_t t_ms = 0;  // the agent's clock (unix ms)
  bool lost = false;
  std::optional<double> temperature_c;           // 150
  std::optional<double> power_w;                 // 155
  std::optional<double> pcie_replay;             // 202, a counter
  std::optional<double> ecc_dbe_volatile;        // 311
  std::optional<double> retired_sbe;             // 390
  std::optional<double> retired_dbe;             // 391
  std::optional<double> retired_pending;         // 392 (1: a retirement waits for a reset)
  std::optional<double> remapped_uncorrectable;  // 393
  std::optional<double> row_remap_failure;       // 395
  std::optional<double> inforom_valid;           // 84 (1 valid, 0 corrupt)
  std::optional<double> power_violation_ns;      // 240, a counter
  std::optional<double> thermal_violation_ns;    // 241, a counter
  std::optional<double> nvlink_crc_flit;         // 409
  std::optional<double> nvlink_crc_data;         // 419
  std::optional<double> nvlink_replay;           // 429
  std::optional<double> nvlink_recovery;         // 439
  std::vector<std::uint64_t> xids;               // XID events since the previous read (230)
  std::optional<XidAction> action;  // the recommended action, when read through the fault layer
};

// The catalogue fields a health watch or a policy reads (those this build's catalogue has).
std::span<const FieldIndex> ReadingFields();

// Keeps in `into` every reading `from` has (the newest value of each); XIDs are not touched.
void KeepNewest(GpuReading& into, const GpuReading& from);

// Takes the readings out of `s` (a GPU's sample); `t_ms` stamps them.
GpuReading ReadingFromSample(const Sample& s, std::int64_t t_ms);

}  // namespace gpulse::health
