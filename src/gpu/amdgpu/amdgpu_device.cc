// One amdgpu device: identity at open, readings per tick (amdgpu_device.h).
#include "gpu/amdgpu/amdgpu_device.h"

#include <bitset>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdio>

#include "gpu/amdgpu/gpu_metrics.h"
#include "gpu/amdgpu/sysfs_text.h"
#include "gpu/drm/device_names.h"

namespace gpulse::gpu::amdgpu {
namespace {

using drm::ReadOutcome;
using drm::SysfsFile;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kMicro = 1e-6;  // µW -> W, Hz -> MHz
constexpr double kMilli = 1e-3;  // m°C -> °C

unsigned Index(SysfsSource s) { return static_cast<unsigned>(s); }

// The sources Read below knows how to read.
static_assert(static_cast<unsigned>(SysfsSource::kPcieReplay) < 32);

bool Handled(SysfsSource s) {
  switch (s) {
    case SysfsSource::kBusyPercent:
    case SysfsSource::kMemBusyPercent:
    case SysfsSource::kVramTotal:
    case SysfsSource::kVramUsed:
    case SysfsSource::kVramFree:
    case SysfsSource::kPower:
    case SysfsSource::kPowerInstant:
    case SysfsSource::kEnergy:
    case SysfsSource::kPowerCap:
    case SysfsSource::kTempGpu:
    case SysfsSource::kTempMemory:
    case SysfsSource::kClockGfx:
    case SysfsSource::kClockMemory:
    case SysfsSource::kFanPercent:
    case SysfsSource::kPcieReplay:
      return true;
    default:
      return false;  // kNotRead, or one added to the catalogue after this reader
  }
}

}  // namespace

AmdgpuDevice::AmdgpuDevice(unsigned card, std::string device_dir, std::string pci_address)
    : device_dir_(std::move(device_dir)), pci_address_(std::move(pci_address)) {
  const std::string d = device_dir_ + "/";
  files_[kGpuBusy] = SysfsFile(d + "gpu_busy_percent");
  files_[kMemBusy] = SysfsFile(d + "mem_busy_percent");
  files_[kVramTotal] = SysfsFile(d + "mem_info_vram_total");
  files_[kVramUsed] = SysfsFile(d + "mem_info_vram_used");
  files_[kPcieReplay] = SysfsFile(d + "pcie_replay_count");
  files_[kGpuMetrics] = SysfsFile(d + "gpu_metrics");
  FindHwmon();
  info_.index = card;
  info_.vendor = "amd";
  info_.backend = "amdgpu";
  info_.profiling_unsupported_reason =
      "the profiling fields (DCGM_FI_PROF_*) are read through NVIDIA's GPM; amdgpu's sysfs has no "
      "equivalent";
  info_.pci_bus_id = drm::NvmlPciBusId(pci_address_);
  ReadIdentity();
}

void AmdgpuDevice::FindHwmon() {
  // The device's hwmon whose name is "amdgpu" (a board may carry other sensors' hwmons).
  for (const std::string& name : ListDir(device_dir_ + "/hwmon")) {
    const std::string dir = device_dir_ + "/hwmon/" + name;
    if (ReadText(dir + "/name").value_or("") == "amdgpu") {
      hwmon_dir_ = dir;
      break;
    }
  }
  if (hwmon_dir_.empty()) return;  // every hwmon file stays missing (empty path)
  const std::string h = hwmon_dir_ + "/";
  files_[kPowerAverage] = SysfsFile(h + "power1_average");
  files_[kPowerInput] = SysfsFile(h + "power1_input");
  files_[kPowerCap] = SysfsFile(h + "power1_cap");
  files_[kPwm] = SysfsFile(h + "pwm1");
  // Temperatures and clocks by their labels; the channel numbers are only conventions.
  bool any_temp_label = false;
  for (unsigned n = 1; n <= 8; ++n) {
    const std::string base = h + "temp" + std::to_string(n);
    auto label = ReadText(base + "_label");
    if (!label) continue;
    any_temp_label = true;
    if (*label == "edge") files_[kTempEdge] = SysfsFile(base + "_input");
    if (*label == "junction") files_[kTempJunction] = SysfsFile(base + "_input");
    if (*label == "mem") files_[kTempMem] = SysfsFile(base + "_input");
  }
  if (!any_temp_label) files_[kTempEdge] = SysfsFile(h + "temp1_input");  // pre-label kernels
  files_[kFreqSclk] = SysfsFile(h + "freq1_input");
  files_[kFreqMclk] = SysfsFile(h + "freq2_input");
  for (unsigned n = 1; n <= 4; ++n) {
    const std::string base = h + "freq" + std::to_string(n);
    auto label = ReadText(base + "_label");
    if (label == "sclk") files_[kFreqSclk] = SysfsFile(base + "_input");
    if (label == "mclk") files_[kFreqMclk] = SysfsFile(base + "_input");
  }
}

void AmdgpuDevice::ReadIdentity() {
  const std::string d = device_dir_ + "/";
  const auto device_id = ParseHex(ReadText(d + "device").value_or(""));
  const std::string product = ReadText(d + "product_name").value_or("");
  if (!product.empty()) {
    info_.name = product;
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "AMD GPU 0x%04x", device_id.value_or(0));
    info_.name = device_id ? buf : "AMD GPU";
  }
  // ROCr prints the unique id as "GPU-%016X".
  std::string unique = ReadText(d + "unique_id").value_or("");
  bool hex = !unique.empty() && unique.size() <= 16;
  for (char& c : unique) {
    hex = hex && std::isxdigit(static_cast<unsigned char>(c));
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (hex) info_.uuid = "GPU-" + std::string(16 - unique.size(), '0') + unique;
  if (auto total = drm::ParseInt(ReadText(d + "mem_info_vram_total").value_or(""))) {
    info_.memory_total_bytes = static_cast<std::uint64_t>(*total);
  }
  if (!hwmon_dir_.empty()) {
    if (auto cap = drm::ParseInt(ReadText(hwmon_dir_ + "/power1_cap").value_or(""))) {
      info_.power_limit_watts = static_cast<double>(*cap) * kMicro;
    }
  }
  if (auto t = ReadText(d + "pp_dpm_sclk")) info_.max_sm_clock_mhz = TopDpmLevelMhz(*t);
  if (auto t = ReadText(d + "pp_dpm_mclk")) info_.max_memory_clock_mhz = TopDpmLevelMhz(*t);
}

void AmdgpuDevice::ReadScaled(File f, double scale, std::optional<double>& value, bool& unsupported,
                              ReadStats& stats) {
  std::int64_t raw = 0;
  const bool known_missing = files_[f].missing();
  switch (files_[f].ReadInt(raw)) {
    case ReadOutcome::kOk:
      value = static_cast<double>(raw) * scale;
      return;
    case ReadOutcome::kMissing:
      unsupported = true;
      if (!known_missing) ++stats.unsupported_calls;  // counted once: it is never retried
      return;
    case ReadOutcome::kFailed:
      ++stats.failed_calls;
      return;
  }
}

void AmdgpuDevice::ReadEnergy(std::optional<double>& value, bool& unsupported, ReadStats& stats) {
  if (!energy_note_.empty()) {
    unsupported = true;
    return;
  }
  std::size_t n = 0;
  const bool known_missing = files_[kGpuMetrics].missing();
  switch (files_[kGpuMetrics].Read(metrics_buf_, n)) {
    case ReadOutcome::kMissing:
      unsupported = true;
      if (!known_missing) ++stats.unsupported_calls;
      return;
    case ReadOutcome::kFailed:
      ++stats.failed_calls;
      return;
    case ReadOutcome::kOk:
      break;
  }
  auto m = DecodeGpuMetrics(std::as_bytes(std::span<const char>(metrics_buf_.data(), n)));
  if (!m.ok()) {
    if (m.error().code == ErrorCode::kUnavailable) {
      energy_note_ = m.error().message;  // an unknown revision stays unknown: say so once
      unsupported = true;
      ++stats.unsupported_calls;
    } else {
      ++stats.failed_calls;  // a short or inconsistent table: try again next tick
    }
    return;
  }
  if (!m->energy_accumulator) {
    // All ones: the firmware does not fill it on this GPU.
    energy_note_ = "gpu_metrics " + std::to_string(m->format_revision) + "." +
                   std::to_string(m->content_revision) + " has no energy_accumulator";
    unsupported = true;
    ++stats.unsupported_calls;
    return;
  }
  value = EnergyAccumulatorToMilliJoules(*m->energy_accumulator);
}

void AmdgpuDevice::Read(std::span<const FieldIndex> fields, Sample& out, ReadStats& stats) {
  const std::size_t count = AllFields().size();
  out.values.assign(count, std::nullopt);
  out.unsupported.assign(count, false);
  out.state = DeviceState::kOk;
  out.xid_events.clear();
  out.xid_counts.clear();
  out.profiling_stuck = false;

  std::bitset<kSourceCount> want;
  for (FieldIndex f : fields) {
    const SysfsSource s = SourceFor(FieldAt(f), SysfsVendor::kAmdgpu);
    if (Handled(s)) want.set(Index(s));
  }
  std::array<std::optional<double>, kSourceCount> v{};
  std::array<bool, kSourceCount> unsup{};
  auto wanted = [&](SysfsSource s) { return want[Index(s)]; };
  auto slot = [&](SysfsSource s) -> std::optional<double>& { return v[Index(s)]; };
  auto no = [&](SysfsSource s) -> bool& { return unsup[Index(s)]; };

  if (wanted(SysfsSource::kBusyPercent)) {
    ReadScaled(kGpuBusy, 1.0, slot(SysfsSource::kBusyPercent), no(SysfsSource::kBusyPercent),
               stats);
  }
  if (wanted(SysfsSource::kMemBusyPercent)) {
    ReadScaled(kMemBusy, 1.0, slot(SysfsSource::kMemBusyPercent), no(SysfsSource::kMemBusyPercent),
               stats);
  }
  const bool need_total = wanted(SysfsSource::kVramTotal) || wanted(SysfsSource::kVramFree);
  const bool need_used = wanted(SysfsSource::kVramUsed) || wanted(SysfsSource::kVramFree);
  std::optional<double> total, used;
  bool total_unsup = false, used_unsup = false;
  if (need_total) {
    // The VRAM size is fixed when the driver loads: read at open, not per tick.
    if (info_.memory_total_bytes) {
      total = static_cast<double>(*info_.memory_total_bytes);
    } else {
      ReadScaled(kVramTotal, 1.0, total, total_unsup, stats);
    }
  }
  if (need_used) ReadScaled(kVramUsed, 1.0, used, used_unsup, stats);
  if (total) slot(SysfsSource::kVramTotal) = *total / kMiB;
  if (used) slot(SysfsSource::kVramUsed) = *used / kMiB;
  if (total && used) slot(SysfsSource::kVramFree) = (*total - *used) / kMiB;
  no(SysfsSource::kVramTotal) = total_unsup;
  no(SysfsSource::kVramUsed) = used_unsup;
  no(SysfsSource::kVramFree) = total_unsup || used_unsup;

  if (wanted(SysfsSource::kPower)) {
    bool average_missing = false;
    ReadScaled(kPowerAverage, kMicro, slot(SysfsSource::kPower), average_missing, stats);
    if (average_missing) {
      ReadScaled(kPowerInput, kMicro, slot(SysfsSource::kPower), no(SysfsSource::kPower), stats);
    }
  }
  if (wanted(SysfsSource::kPowerInstant)) {
    // Only a second reading next to power1_average; alone, power1_input is the power field.
    if (!files_[kPowerAverage].Exists()) {
      no(SysfsSource::kPowerInstant) = true;
    } else {
      ReadScaled(kPowerInput, kMicro, slot(SysfsSource::kPowerInstant),
                 no(SysfsSource::kPowerInstant), stats);
    }
  }
  if (wanted(SysfsSource::kEnergy)) {
    ReadEnergy(slot(SysfsSource::kEnergy), no(SysfsSource::kEnergy), stats);
  }
  if (wanted(SysfsSource::kPowerCap)) {
    ReadScaled(kPowerCap, kMicro, slot(SysfsSource::kPowerCap), no(SysfsSource::kPowerCap), stats);
  }
  if (wanted(SysfsSource::kTempGpu)) {
    // The edge sensor, else the junction (hotspot) one: MI300-class GPUs have no edge sensor.
    const File f = files_[kTempEdge].Exists() ? kTempEdge : kTempJunction;
    ReadScaled(f, kMilli, slot(SysfsSource::kTempGpu), no(SysfsSource::kTempGpu), stats);
  }
  if (wanted(SysfsSource::kTempMemory)) {
    ReadScaled(kTempMem, kMilli, slot(SysfsSource::kTempMemory), no(SysfsSource::kTempMemory),
               stats);
  }
  if (wanted(SysfsSource::kClockGfx)) {
    ReadScaled(kFreqSclk, kMicro, slot(SysfsSource::kClockGfx), no(SysfsSource::kClockGfx), stats);
  }
  if (wanted(SysfsSource::kClockMemory)) {
    ReadScaled(kFreqMclk, kMicro, slot(SysfsSource::kClockMemory), no(SysfsSource::kClockMemory),
               stats);
  }
  if (wanted(SysfsSource::kFanPercent)) {
    std::optional<double>& fan = slot(SysfsSource::kFanPercent);
    ReadScaled(kPwm, 1.0, fan, no(SysfsSource::kFanPercent), stats);
    if (fan) fan = std::round(*fan * 100.0 / 255.0);
  }
  if (wanted(SysfsSource::kPcieReplay)) {
    ReadScaled(kPcieReplay, 1.0, slot(SysfsSource::kPcieReplay), no(SysfsSource::kPcieReplay),
               stats);
  }

  for (FieldIndex f : fields) {
    const SysfsSource s = SourceFor(FieldAt(f), SysfsVendor::kAmdgpu);
    if (!Handled(s)) {
      out.unsupported[f] = true;
      continue;
    }
    out.values[f] = v[Index(s)];
    if (!out.values[f] && unsup[Index(s)]) out.unsupported[f] = true;
  }
}

}  // namespace gpulse::gpu::amdgpu
