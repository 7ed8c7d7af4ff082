// Decoding amdgpu's binary `gpu_metrics` table (sysfs device/gpu_metrics), whose layouts are the
// kernel's `struct gpu_metrics_vX_Y` in drivers/gpu/drm/amd/include/kgd_pp_interface.h:
// little-endian, naturally aligned, a 4-byte header {u16 structure_size; u8 format_revision;
// u8 content_revision}. The kernel fills the table with 0xFF before the firmware's values go in,
// so a field of all ones is one the firmware does not give: it decodes as absent, never as a value.
//
// Revisions decoded: 1.0-1.3 (discrete GPUs up to RDNA3) and 1.4-1.6 (MI300-class). Other
// revisions (the 2.x/3.x APU tables, a newer 1.x) are refused with kUnavailable, so a caller can
// say once why energy is missing instead of guessing at a layout.
//
// Pure functions over bytes; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/result.h"

namespace gpulse::gpu::amdgpu {

struct GpuMetrics {
  std::uint8_t format_revision = 0;
  std::uint8_t content_revision = 0;
  // Temperatures (°C). 1.4+ has no edge sensor.
  std::optional<double> temperature_edge_c;
  std::optional<double> temperature_hotspot_c;
  std::optional<double> temperature_mem_c;
  // Activity (%): graphics engine, memory controller (UMC), multimedia (1.0-1.3; VCN 0 on 1.4+).
  std::optional<double> gfx_activity_pct;
  std::optional<double> umc_activity_pct;
  std::optional<double> mm_activity_pct;
  // Socket power (W): average_socket_power on 1.0-1.3, curr_socket_power on 1.4+.
  std::optional<double> socket_power_w;
  // The raw energy accumulator (1.0: 32 bits, else 64 bits) in 15.259 µJ (2^-16 J) units.
  std::optional<std::uint64_t> energy_accumulator;
  std::optional<std::uint64_t> system_clock_counter_ns;
  // Current clocks (MHz): gfx (instance 0 on 1.4+) and memory (uclk).
  std::optional<double> current_gfxclk_mhz;
  std::optional<double> current_uclk_mhz;
  // ASIC-dependent throttle bits; the ASIC-independent ones on 1.3 only.
  std::optional<std::uint32_t> throttle_status;
  std::optional<std::uint64_t> indep_throttle_status;
};

// The size in bytes of the kernel's struct for a revision, or 0 when it is not one decoded here.
std::size_t GpuMetricsSize(std::uint8_t format_revision, std::uint8_t content_revision);

// Decodes a table. Errors: kUnavailable for a well-formed header of a revision not decoded here
// (the message names it); kInvalidArgument for a table shorter than its header, a structure_size
// that does not match the revision's struct, or fewer bytes than structure_size.
Result<GpuMetrics> DecodeGpuMetrics(std::span<const std::byte> bytes);

// The accumulator in millijoules: counts × 2^-16 J × 1000.
constexpr double EnergyAccumulatorToMilliJoules(std::uint64_t count) {
  return static_cast<double>(count) * (1000.0 / 65536.0);
}

}  // namespace gpulse::gpu::amdgpu
