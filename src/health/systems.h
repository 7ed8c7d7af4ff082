// The vocabulary of health watches (DCGM's `dcgmi health`): the subsystems a watch covers, the
// verdicts, and what an XID error says about a GPU's health.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::health {

// DCGM's health results (dcgm_structs.h): the numbers are DCGM's and the exporter's values.
enum class Verdict { kPass = 0, kWarn = 10, kFail = 20 };

std::string_view VerdictKey(Verdict v);   // "pass", "warn", "fail" (JSON)
std::string_view VerdictText(Verdict v);  // "Healthy", "Warning", "Failure" (dcgmi's words)
Verdict Worst(Verdict a, Verdict b);

// The subsystems, as bits of a watch's mask. `dcgmi health -s` letters: p PCIe, m memory, i
// InfoROM, t thermal and power (both bits), n NVLink, d driver, a all.
enum Subsystem : unsigned {
  kPcie = 1u << 0,
  kMemory = 1u << 1,
  kInforom = 1u << 2,
  kThermal = 1u << 3,
  kPower = 1u << 4,
  kNvlink = 1u << 5,
  kDriver = 1u << 6,
};
inline constexpr unsigned kAllSubsystems = 0x7f;
inline constexpr unsigned kDefaultSubsystems = kPcie | kMemory;  // dcgmi's default, "pm"

// Every subsystem bit, in display order.
const std::vector<Subsystem>& AllSubsystems();
std::string_view SubsystemKey(Subsystem s);   // "pcie", "memory", ... (JSON, exporter label)
std::string_view SubsystemName(Subsystem s);  // "PCIe", "Memory", "InfoROM", ... (tables)

// "pm", "pmitnd", "a": unknown or repeated letters fail naming the letter.
Result<unsigned> ParseSubsystems(std::string_view letters);
// The mask as letters ("t" for thermal and power together), e.g. "pmt".
std::string SubsystemLetters(unsigned mask);
// Keys of the mask's bits, e.g. {"pcie", "memory"}.
std::vector<std::string> SubsystemKeys(unsigned mask);

// What an XID says about the GPU's health, from the actions NVIDIA's XID catalog gives
// (docs.nvidia.com/deploy/xid-errors): the subsystem it concerns and how bad it is. nullopt for the
// errors an application causes (13, 31, 43, 45, 68, 69), which are not the GPU's.
struct XidHealth {
  Subsystem system;
  Verdict verdict;
};
std::optional<XidHealth> ClassifyXid(std::uint64_t xid);

}  // namespace gpulse::health
