// DRM fdinfo parsing and the procfs scan of DRM clients (fdinfo.h).
#include "gpu/drm/fdinfo.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "gpu/drm/device_names.h"

namespace gpulse::gpu::drm {
namespace {

constexpr unsigned kDrmMajor = 226;  // the DRM character devices, /dev/dri/*

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "<u>" or "<u> <unit>"; the unit, when present, is returned in `unit`.
std::optional<std::uint64_t> ParseNumber(std::string_view value, std::string_view& unit) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p == value.data()) return std::nullopt;
  unit = Trim(value.substr(static_cast<std::size_t>(p - value.data())));
  return v;
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

using Sizes = std::vector<std::pair<std::string, std::uint64_t>>;

template <typename T>
void Put(std::vector<std::pair<std::string, T>>& list, std::string_view name, T value) {
  for (auto& [k, v] : list) {
    if (k == name) {
      v = value;
      return;
    }
  }
  list.emplace_back(std::string(name), value);
}

// What a text says besides its drm- keys: amdgpu's format before 5.19.
struct LegacyAmdgpu {
  std::optional<std::string> pdev;  // "pdev:"
  Sizes resident;                   // "<region> mem:"
  std::vector<std::pair<std::string, double>> percent;
};

void ParseDrmKey(std::string_view key, std::string_view value, DrmFdinfo& info, Sizes& aliases,
                 bool& is_drm) {
  std::string_view unit;
  if (key == "drm-driver") {
    info.driver = std::string(value);
    is_drm = !value.empty();
  } else if (key == "drm-pdev") {
    info.pdev = LowerPciAddress(value);
  } else if (key == "drm-client-id") {
    if (auto id = ParseNumber(value, unit); id && unit.empty()) info.client_id = *id;
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
    RegionOf(info, key.substr(10)).total_bytes = ParseDrmMemorySize(value);
  } else if (key.starts_with("drm-resident-")) {
    RegionOf(info, key.substr(13)).resident_bytes = ParseDrmMemorySize(value);
  } else if (key.starts_with("drm-memory-")) {
    RegionOf(info, key.substr(11));
    if (auto b = ParseDrmMemorySize(value)) Put(aliases, key.substr(11), *b);
  }
}

void ParseLegacyAmdgpuKey(std::string_view key, std::string_view value, LegacyAmdgpu& legacy) {
  if (key == "pdev") {
    legacy.pdev = std::string(value);
  } else if (key.ends_with(" mem")) {  // "vram mem:\t1024 kB"
    if (auto b = ParseDrmMemorySize(value)) Put(legacy.resident, key.substr(0, key.size() - 4), *b);
  } else if (value.ends_with('%')) {  // "gfx0:\t12.50%"
    double pct = 0;
    const std::string_view number = Trim(value.substr(0, value.size() - 1));
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), pct);
    if (ec == std::errc() && p == number.data() + number.size()) Put(legacy.percent, key, pct);
  }
}

std::optional<unsigned> ParseUnsigned(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The numeric names among `names` (PIDs, fds), ascending.
std::vector<unsigned> Numeric(const Result<std::vector<std::string>>& names) {
  std::vector<unsigned> out;
  if (!names.ok()) return out;
  for (const std::string& name : *names) {
    if (auto n = ParseUnsigned(name)) out.push_back(*n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether /proc/PID/fd/FD is a DRM device file. Only DRM nodes are read: reading every socket's
// fdinfo would cost far more than the scan needs.
bool IsDrmDescriptor(const std::string& path) {
  char target[256];
  const ssize_t n = ::readlink(path.c_str(), target, sizeof target);
  if (n <= 0) return false;
  if (std::string_view(target, static_cast<std::size_t>(n)).starts_with("/dev/dri/")) return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == kDrmMajor;
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

std::optional<std::uint64_t> DrmFdinfo::BusyNs(std::string_view engine) const {
  const DrmEngineUsage* e = Engine(engine);
  return e == nullptr ? std::nullopt : e->busy_ns;
}

std::optional<std::uint64_t> DrmFdinfo::Resident(std::string_view region) const {
  const DrmRegionMemory* r = Region(region);
  return r == nullptr ? std::nullopt : r->resident_bytes;
}

std::optional<std::uint64_t> ParseDrmMemorySize(std::string_view value) {
  std::string_view unit;
  auto n = ParseNumber(Trim(value), unit);
  if (!n) return std::nullopt;
  if (unit.empty()) return *n;
  if (unit == "KiB" || unit == "kB") return *n * 1024;
  if (unit == "MiB") return *n * 1024 * 1024;
  return std::nullopt;
}

std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text) {
  DrmFdinfo info;
  bool is_drm = false;
  Sizes aliases;  // drm-memory-<r>: a drm-resident-<r> wins over it
  LegacyAmdgpu legacy;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key.starts_with("drm-")) {
      ParseDrmKey(key, value, info, aliases, is_drm);
    } else {
      ParseLegacyAmdgpuKey(key, value, legacy);
    }
  }
  if (!is_drm) {
    if (!legacy.pdev) return std::nullopt;
    info.driver = "amdgpu";
  }
  if (info.driver == "amdgpu") {
    if (info.pdev.empty() && legacy.pdev) info.pdev = LowerPciAddress(*legacy.pdev);
    for (const auto& [region, bytes] : legacy.resident) Put(aliases, region, bytes);
    info.legacy_engine_percent = std::move(legacy.percent);
  }
  for (const auto& [region, bytes] : aliases) {
    DrmRegionMemory& r = RegionOf(info, region);
    if (!r.resident_bytes) r.resident_bytes = bytes;
  }
  return info;
}

Result<std::vector<DrmClient>> ScanDrmClients(const sys::RootedFs& proc, std::string_view driver) {
  auto top = proc.ListDir("");
  if (!top.ok()) return top.error();
  std::vector<DrmClient> clients;
  std::map<std::pair<std::string, std::uint64_t>, std::size_t> by_id;  // (pdev, id) -> index
  for (unsigned pid : Numeric(top)) {
    const std::string dir = std::to_string(pid);
    for (unsigned fd : Numeric(proc.ListDir(dir + "/fd"))) {  // none: exited, or not ours
      const std::string n = std::to_string(fd);
      if (!IsDrmDescriptor(proc.PathOf(dir + "/fd/" + n))) continue;
      auto text = proc.ReadFile(dir + "/fdinfo/" + n, std::size_t{64} * 1024);
      if (!text.ok()) continue;
      auto info = ParseDrmFdinfo(*text);
      if (!info || (!driver.empty() && info->driver != driver)) continue;
      if (info->client_id) {
        auto [it, added] = by_id.try_emplace({info->pdev, *info->client_id}, clients.size());
        if (!added) {  // a dup()ed descriptor, or one shared with another process
          std::vector<unsigned>& pids = clients[it->second].pids;
          if (pids.back() != pid) pids.push_back(pid);
          continue;
        }
      }
      clients.push_back(DrmClient{{pid}, std::move(*info)});
    }
  }
  return clients;
}

}  // namespace gpulse::gpu::drm
