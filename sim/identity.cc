#include "identity.h"

#include <array>
#include <cctype>
#include <cstdio>

namespace gpulse::sim {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::string FormatUuid(std::string_view prefix, uint64_t hi, uint64_t lo) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return std::string(prefix) + buf;
}

bool IsHex(std::string_view s) {
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return !s.empty();
}

}  // namespace

uint64_t StableHash(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return SplitMix64(h);
}

std::string GenerateGpuUuid(std::string_view scenario, unsigned index) {
  uint64_t h = StableHash(std::string(scenario) + "#" + std::to_string(index));
  return FormatUuid("GPU-", h, SplitMix64(h));
}

std::string GenerateMigUuid(std::string_view parent_uuid, unsigned gpu_instance_id,
                            unsigned compute_instance_id) {
  uint64_t h = StableHash(std::string(parent_uuid) + "/" + std::to_string(gpu_instance_id) + "/" +
                          std::to_string(compute_instance_id));
  return FormatUuid("MIG-", h, SplitMix64(h));
}

std::string GeneratePciBusId(unsigned index) {
  // The bus numbers of an 8-GPU HGX baseboard; larger systems continue in the next PCI domain.
  constexpr std::array<unsigned, 8> kBuses = {0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:00.0", index / 8, kBuses[index % 8]);
  return buf;
}

bool IsValidUuid(std::string_view uuid, std::string_view prefix) {
  if (uuid.substr(0, prefix.size()) != prefix) return false;
  std::string_view body = uuid.substr(prefix.size());
  constexpr std::array<size_t, 5> kGroups = {8, 4, 4, 4, 12};
  for (size_t i = 0; i < kGroups.size(); ++i) {
    if (body.size() < kGroups[i] || !IsHex(body.substr(0, kGroups[i]))) return false;
    body.remove_prefix(kGroups[i]);
    if (i + 1 < kGroups.size()) {
      if (body.empty() || body[0] != '-') return false;
      body.remove_prefix(1);
    }
  }
  return body.empty();
}

std::optional<std::string> NormalizePciBusId(std::string_view bus_id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::string_view rest = bus_id;
  // Optional domain: everything before the first of two colons.
  size_t first = rest.find(':');
  size_t second = first == std::string_view::npos ? first : rest.find(':', first + 1);
  if (second != std::string_view::npos) {
    std::string_view d = rest.substr(0, first);
    if (d.size() > 8 || !IsHex(d)) return std::nullopt;
    domain = static_cast<unsigned>(std::stoul(std::string(d), nullptr, 16));
    rest.remove_prefix(first + 1);
  }
  // "BB:DD.F"
  if (rest.size() != 7 || rest[2] != ':' || rest[5] != '.') return std::nullopt;
  std::string_view b = rest.substr(0, 2), dv = rest.substr(3, 2), f = rest.substr(6, 1);
  if (!IsHex(b) || !IsHex(dv) || !IsHex(f)) return std::nullopt;
  bus = static_cast<unsigned>(std::stoul(std::string(b), nullptr, 16));
  device = static_cast<unsigned>(std::stoul(std::string(dv), nullptr, 16));
  function = static_cast<unsigned>(std::stoul(std::string(f), nullptr, 16));
  if (device > 0x1F || function > 7) return std::nullopt;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", domain, bus, device, function);
  return std::string(buf);
}

}  // namespace gpulse::sim
