// Deterministic identities for simulated devices: UUIDs and PCI bus ids generated from the scenario
// name and device index when a scenario does not give them, and the format checks for given ones.
// Deterministic means the same scenario yields the same identities on every machine and every run,
// so tests and golden files can rely on them.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpulse::sim {

// FNV-1a over `text`, then a SplitMix64 finaliser: a stable, well-mixed 64-bit hash.
uint64_t StableHash(std::string_view text);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex) for device `index` of `scenario`.
std::string GenerateGpuUuid(std::string_view scenario, unsigned index);
// "MIG-…" for a MIG instance of the GPU `parent_uuid`.
std::string GenerateMigUuid(std::string_view parent_uuid, unsigned gpu_instance_id,
                            unsigned compute_instance_id);
// A PCI bus id such as "00000000:18:00.0", distinct for every index (DGX-like bus numbers).
std::string GeneratePciBusId(unsigned index);

// True when `uuid` is `prefix` followed by 8-4-4-4-12 hex digits.
bool IsValidUuid(std::string_view uuid, std::string_view prefix);
// "17:00.0", "0000:17:00.0" or "00000000:17:00.0" (any hex case) → "00000000:17:00.0"; nullopt when
// malformed.
std::optional<std::string> NormalizePciBusId(std::string_view bus_id);

}  // namespace gpulse::sim
