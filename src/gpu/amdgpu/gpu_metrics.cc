// Field offsets of each gpu_metrics revision, taken from the kernel's structs under C's natural
// alignment (the kernel declares them without packing). tests/testdata/sysfs/make_fixtures.py
// derives the same layouts independently with ctypes, and the tests decode its bytes.
#include "gpu/amdgpu/gpu_metrics.h"

#include <array>
#include <cstring>
#include <string>

namespace gpulse::gpu::amdgpu {
namespace {

constexpr int kNone = -1;

// Where each decoded member sits in one revision's struct (kNone: the revision has no such member).
struct Layout {
  std::uint8_t format;
  std::uint8_t content;
  std::uint16_t size;
  int temperature_edge, temperature_hotspot, temperature_mem;  // u16
  int gfx_activity, umc_activity, mm_activity;                 // u16
  int socket_power;                                            // u16
  int energy;                                                  // u32 on 1.0, else u64
  int system_clock_counter;                                    // u64
  int current_gfxclk, current_uclk;                            // u16
  int throttle_status;                                         // u32
  int indep_throttle_status;                                   // u64
};

// clang-format off
constexpr std::array kLayouts = {
    //     f  c  size  edge hot mem  gfx umc  mm  pwr  energy clock gfxclk uclk thr indep
    Layout{1, 0,  80,  16,  18, 20,  28, 30,  32, 34,  36,    8,    54,    58,  68, kNone},
    Layout{1, 1,  96,   4,   6,  8,  16, 18,  20, 22,  24,    32,   54,    58,  68, kNone},
    Layout{1, 2, 104,   4,   6,  8,  16, 18,  20, 22,  24,    32,   54,    58,  68, kNone},
    Layout{1, 3, 120,   4,   6,  8,  16, 18,  20, 22,  24,    32,   54,    58,  68, 112},
    // 1.4+: no edge sensor; curr_socket_power; vcn_activity[0] as the multimedia activity;
    // current_gfxclk[0] of MAX_GFX_CLKS.
    Layout{1, 4, 288, kNone, 4,  6,  12, 14,  16, 10,  24,    32,   240,   280, 40, kNone},
    Layout{1, 5, 360, kNone, 4,  6,  12, 14,  16, 10,  88,    96,   312,   352, 104, kNone},
    Layout{1, 6, 384, kNone, 4,  6,  12, 14,  16, 10,  88,    96,   336,   376, 128, kNone},
};
// clang-format on

const Layout* FindLayout(std::uint8_t format, std::uint8_t content) {
  for (const Layout& l : kLayouts) {
    if (l.format == format && l.content == content) return &l;
  }
  return nullptr;
}

template <typename T>
T LoadLe(std::span<const std::byte> bytes, int offset) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<T>(std::to_integer<std::uint8_t>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

template <typename T>
std::optional<T> Field(std::span<const std::byte> bytes, int offset) {
  if (offset == kNone) return std::nullopt;
  T v = LoadLe<T>(bytes, offset);
  if (v == static_cast<T>(~T{0})) return std::nullopt;  // the kernel's 0xFF fill: not given
  return v;
}

std::optional<double> U16(std::span<const std::byte> bytes, int offset) {
  auto v = Field<std::uint16_t>(bytes, offset);
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

}  // namespace

std::size_t GpuMetricsSize(std::uint8_t format_revision, std::uint8_t content_revision) {
  const Layout* l = FindLayout(format_revision, content_revision);
  return l == nullptr ? 0 : l->size;
}

Result<GpuMetrics> DecodeGpuMetrics(std::span<const std::byte> bytes) {
  if (bytes.size() < 4) {
    return InvalidArgument("gpu_metrics: " + std::to_string(bytes.size()) +
                           " bytes, shorter than its 4-byte header");
  }
  const auto structure_size = LoadLe<std::uint16_t>(bytes, 0);
  const auto format = std::to_integer<std::uint8_t>(bytes[2]);
  const auto content = std::to_integer<std::uint8_t>(bytes[3]);
  const std::string revision = std::to_string(format) + "." + std::to_string(content);
  const Layout* l = FindLayout(format, content);
  if (l == nullptr) {
    return Unavailable("gpu_metrics revision " + revision + " is not decoded by gpulse");
  }
  if (structure_size != l->size) {
    return InvalidArgument("gpu_metrics " + revision + ": structure_size " +
                           std::to_string(structure_size) + ", expected " +
                           std::to_string(l->size));
  }
  if (bytes.size() < l->size) {
    return InvalidArgument("gpu_metrics " + revision + ": " + std::to_string(bytes.size()) +
                           " bytes, truncated (structure_size " + std::to_string(l->size) + ")");
  }
  GpuMetrics m;
  m.format_revision = format;
  m.content_revision = content;
  m.temperature_edge_c = U16(bytes, l->temperature_edge);
  m.temperature_hotspot_c = U16(bytes, l->temperature_hotspot);
  m.temperature_mem_c = U16(bytes, l->temperature_mem);
  m.gfx_activity_pct = U16(bytes, l->gfx_activity);
  m.umc_activity_pct = U16(bytes, l->umc_activity);
  m.mm_activity_pct = U16(bytes, l->mm_activity);
  m.socket_power_w = U16(bytes, l->socket_power);
  if (format == 1 && content == 0) {
    m.energy_accumulator = Field<std::uint32_t>(bytes, l->energy);
  } else {
    m.energy_accumulator = Field<std::uint64_t>(bytes, l->energy);
  }
  m.system_clock_counter_ns = Field<std::uint64_t>(bytes, l->system_clock_counter);
  m.current_gfxclk_mhz = U16(bytes, l->current_gfxclk);
  m.current_uclk_mhz = U16(bytes, l->current_uclk);
  m.throttle_status = Field<std::uint32_t>(bytes, l->throttle_status);
  m.indep_throttle_status = Field<std::uint64_t>(bytes, l->indep_throttle_status);
  return m;
}

}  // namespace gpulse::gpu::amdgpu
