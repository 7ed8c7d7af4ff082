#include "scenario.h"

#include <array>

namespace gpulse::sim {
namespace {

// Indexed by Call; the names scenario files use.
constexpr std::array<std::string_view, kCallCount> kCallNames = {
    "utilization",
    "encoder_utilization",
    "decoder_utilization",
    "memory_info_v2",
    "memory_info",
    "power_usage",
    "power_instant",
    "power_average",
    "total_energy",
    "enforced_power_limit",
    "power_management_limit",
    "temperature",
    "memory_temp",
    "clocks",
    "max_clocks",
    "pstate",
    "clocks_event_reasons",
    "pcie_replay",
    "ecc",
    "retired_pages",
    "remapped_rows",
    "field_values",
    "events",
    "process_detail_list",
    "process_utilization",
    "gpm",
    "pcie_throughput",
    "fan_speed",
    "violation_status",
    "nvlink",
    "inforom",
    "compute_mode",
    "ecc_mode",
    "persistence_mode",
    "applications_clocks",
    "power_limit_settings",
    "pcie_link",
};

}  // namespace

std::span<const std::string_view> CallNames() { return kCallNames; }

std::string_view CallName(Call call) { return kCallNames[static_cast<size_t>(call)]; }

std::optional<Call> CallFromName(std::string_view name) {
  for (size_t i = 0; i < kCallCount; ++i) {
    if (kCallNames[i] == name) return static_cast<Call>(i);
  }
  return std::nullopt;
}

std::string AllCallNames() {
  std::string out;
  for (std::string_view n : kCallNames) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace gpulse::sim
