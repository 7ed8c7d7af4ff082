// DRM fdinfo parsing and the procfs scan (fdinfo.h).
#include "gpu/amdgpu/fdinfo.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <filesystem>

#include "sys/rooted_fs.h"

namespace gpulse::gpu {
namespace {

constexpr unsigned kDrmMajor = 226;  // the DRM character devices, /dev/dri/*

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<std::uint64_t> ParseU64Prefix(std::string_view s, std::string_view& rest) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc()) return std::nullopt;
  rest = Trim(s.substr(static_cast<std::size_t>(p - s.data())));
  return v;
}

template <typename T>
std::optional<T> Lookup(const std::vector<std::pair<std::string, T>>& list, std::string_view name) {
  for (const auto& [k, v] : list) {
    if (k == name) return v;
  }
  return std::nullopt;
}

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

std::optional<unsigned> ParseUnsigned(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::uint64_t> DrmFdinfo::Engine(std::string_view name) const {
  return Lookup(engine_busy_ns, name);
}

std::optional<std::uint64_t> DrmFdinfo::Resident(std::string_view region) const {
  return Lookup(resident_bytes, region);
}

std::optional<std::uint64_t> ParseDrmMemorySize(std::string_view value) {
  std::string_view unit;
  auto n = ParseU64Prefix(Trim(value), unit);
  if (!n) return std::nullopt;
  if (unit.empty()) return *n;
  if (unit == "KiB" || unit == "kB") return *n * 1024;
  if (unit == "MiB") return *n * 1024 * 1024;
  if (unit == "GiB") return *n * 1024 * 1024 * 1024;
  return std::nullopt;
}

std::optional<DrmFdinfo> ParseDrmFdinfo(std::string_view text) {
  DrmFdinfo info;
  bool drm = false;
  bool legacy_amdgpu = false;
  // drm-memory-<r> is the deprecated alias of drm-resident-<r>: a resident key wins.
  std::vector<std::pair<std::string, std::uint64_t>> memory_alias;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon));
    const std::string_view value = Trim(line.substr(colon + 1));
    if (key == "drm-driver") {
      info.driver = std::string(value);
      drm = true;
    } else if (key == "drm-pdev" || key == "pdev") {
      info.pdev = std::string(value);
      if (key == "pdev") legacy_amdgpu = true;
    } else if (key == "drm-client-id") {
      std::string_view rest;
      if (auto id = ParseU64Prefix(value, rest); id && rest.empty()) info.client_id = *id;
    } else if (key.starts_with("drm-engine-capacity-")) {
      // a count of engines of one class, not busy time
    } else if (key.starts_with("drm-engine-")) {
      std::string_view unit;
      auto ns = ParseU64Prefix(value, unit);
      if (ns && unit == "ns") Put(info.engine_busy_ns, key.substr(11), *ns);
    } else if (key.starts_with("drm-resident-")) {
      if (auto b = ParseDrmMemorySize(value)) Put(info.resident_bytes, key.substr(13), *b);
    } else if (key.starts_with("drm-memory-")) {
      if (auto b = ParseDrmMemorySize(value)) Put(memory_alias, key.substr(11), *b);
    } else if (key.starts_with("drm-total-")) {
      if (auto b = ParseDrmMemorySize(value)) Put(info.total_bytes, key.substr(10), *b);
    } else if (key.ends_with(" mem")) {  // old amdgpu: "vram mem:\t1024 kB"
      if (auto b = ParseDrmMemorySize(value)) {
        Put(memory_alias, key.substr(0, key.size() - 4), *b);
      }
    } else if (value.ends_with('%')) {  // old amdgpu: "gfx0:\t12.50%"
      double pct = 0;
      std::string_view number = Trim(value.substr(0, value.size() - 1));
      auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), pct);
      if (ec == std::errc() && p == number.data() + number.size()) {
        Put(info.legacy_engine_percent, key, pct);
      }
    }
  }
  if (!drm && legacy_amdgpu) info.driver = "amdgpu";
  if (!drm && !legacy_amdgpu) return std::nullopt;
  for (const auto& [region, bytes] : memory_alias) {
    if (!info.Resident(region)) info.resident_bytes.emplace_back(region, bytes);
  }
  return info;
}

std::vector<DrmClientFd> ScanDrmClients(const std::string& procfs_root, std::string_view driver) {
  std::vector<DrmClientFd> clients;
  const sys::RootedFs proc(procfs_root);
  auto pids = proc.ListDir("");
  if (!pids.ok()) return clients;
  std::vector<unsigned> numeric;
  for (const std::string& name : *pids) {
    if (auto pid = ParseUnsigned(name)) numeric.push_back(*pid);
  }
  std::sort(numeric.begin(), numeric.end());
  for (unsigned pid : numeric) {
    const std::string dir = std::to_string(pid);
    auto fds = proc.ListDir(dir + "/fd");
    if (!fds.ok()) continue;  // another user's process, or it exited
    std::vector<unsigned> fd_numbers;
    for (const std::string& name : *fds) {
      if (auto fd = ParseUnsigned(name)) fd_numbers.push_back(*fd);
    }
    std::sort(fd_numbers.begin(), fd_numbers.end());
    for (unsigned fd : fd_numbers) {
      const std::string fd_rel = dir + "/fd/" + std::to_string(fd);
      // Only DRM nodes: reading every socket's fdinfo would cost far more than the scan needs.
      std::error_code ec;
      const std::string target = std::filesystem::read_symlink(proc.PathOf(fd_rel), ec).string();
      if (ec) continue;
      bool is_drm = target.starts_with("/dev/dri/");
      if (!is_drm) {
        struct stat st {};
        is_drm = ::stat(proc.PathOf(fd_rel).c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
                 major(st.st_rdev) == kDrmMajor;
      }
      if (!is_drm) continue;
      auto text = proc.ReadFile(dir + "/fdinfo/" + std::to_string(fd), std::size_t{64} * 1024);
      if (!text.ok()) continue;
      auto info = ParseDrmFdinfo(*text);
      if (!info || (!driver.empty() && info->driver != driver)) continue;
      clients.push_back({pid, fd, std::move(*info)});
    }
  }
  return clients;
}

}  // namespace gpulse::gpu
