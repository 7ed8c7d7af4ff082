#include "gpu/intel/drm_fdinfo.h"

#include <charconv>

namespace gpulse::gpu::intel {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "<u>" or "<u> <unit>"; the unit, when present, is returned in `unit`.
std::optional<std::uint64_t> ParseNumber(std::string_view value, std::string_view& unit) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr == value.data()) return std::nullopt;
  unit = Trim(value.substr(static_cast<std::size_t>(ptr - value.data())));
  return v;
}

// A memory amount: bytes by default, KiB or MiB when suffixed; nullopt for another unit.
std::optional<std::uint64_t> ParseBytes(std::string_view value) {
  std::string_view unit;
  auto v = ParseNumber(value, unit);
  if (!v) return std::nullopt;
  if (unit.empty()) return v;
  if (unit == "KiB") return *v * 1024;
  if (unit == "MiB") return *v * 1024 * 1024;
  return std::nullopt;
}

DrmEngineUsage& EngineOf(DrmFdinfo& info, std::string_view name) {
  for (DrmEngineUsage& e : info.engines) {
    if (e.name == name) return e;
  }
  info.engines.push_back(DrmEngineUsage{std::string(name), {}, {}, {}, 1});
  return info.engines.back();
}

DrmRegionMemory& RegionOf(DrmFdinfo& info, std::string_view region) {
  for (DrmRegionMemory& r : info.memory) {
    if (r.region == region) return r;
  }
  info.memory.push_back(DrmRegionMemory{std::string(region), {}, {}});
  return info.memory.back();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

void ParseLine(std::string_view key, std::string_view value, DrmFdinfo& info, bool& is_drm) {
  std::string_view unit;
  if (key == "drm-driver") {
    info.driver = std::string(value);
    is_drm = !value.empty();
  } else if (key == "drm-pdev") {
    info.pdev = Lower(value);
  } else if (key == "drm-client-id") {
    info.client_id = ParseNumber(value, unit);
  } else if (key.starts_with("drm-engine-capacity-")) {
    auto v = ParseNumber(value, unit);
    if (v && *v > 0 && *v < 1024) {
      EngineOf(info, key.substr(20)).capacity = static_cast<unsigned>(*v);
    }
  } else if (key.starts_with("drm-engine-")) {
    auto v = ParseNumber(value, unit);
    if (v && (unit.empty() || unit == "ns")) EngineOf(info, key.substr(11)).busy_ns = v;
  } else if (key.starts_with("drm-total-cycles-")) {
    // Checked before drm-total-<region>, which it would otherwise match.
    EngineOf(info, key.substr(17)).total_cycles = ParseNumber(value, unit);
  } else if (key.starts_with("drm-cycles-")) {
    EngineOf(info, key.substr(11)).cycles = ParseNumber(value, unit);
  } else if (key.starts_with("drm-total-")) {
    RegionOf(info, key.substr(10)).total_bytes = ParseBytes(value);
  } else if (key.starts_with("drm-resident-")) {
    RegionOf(info, key.substr(13)).resident_bytes = ParseBytes(value);
  } else if (key.starts_with("drm-memory-")) {
    DrmRegionMemory& r = RegionOf(info, key.substr(11));
    if (!r.resident_bytes) r.resident_bytes = ParseBytes(value);
  }
}

}  // namespace

const DrmEngineUsage* DrmFdinfo::Engine(std::string_view name) const {
  for (const DrmEngineUsage& e : engines) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const DrmRegionMemory* DrmFdinfo::Region(std::string_view region) const {
  for (const DrmRegionMemory& r : memory) {
    if (r.region == region) return &r;
  }
  return nullptr;
}

std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text) {
  DrmFdinfo info;
  bool is_drm = false;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.starts_with("drm-")) continue;
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    ParseLine(line.substr(0, colon), Trim(line.substr(colon + 1)), info, is_drm);
  }
  if (!is_drm) return std::nullopt;
  return info;
}

}  // namespace gpulse::gpu::intel
