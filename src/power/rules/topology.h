// The expected job shape recorded in manifest.json (expected_devices, expected_windows), parsed
// strictly, and the device-identity rules over it: expected vs observed keys, UUID stability, role
// and het-group conflicts, plus the optional canary assertions (--expect-role, distinct het
// groups). Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "power/readers/json_io.h"
#include "power/readers/samples_scan.h"

namespace gpulse::power {

struct Assignment {
  std::string worker_role;  // prefill | decode | agg
  int64_t worker_index = 0;
  int64_t worker_process = 0;
  std::optional<int64_t> het_group;
};

struct ExpectedDevice {
  DeviceKey key;
  std::vector<Assignment> assignments;  // never empty
};

struct WindowKey {
  std::string benchmark_type;
  int64_t concurrency = 0;
  auto operator<=>(const WindowKey&) const = default;
};
std::string WindowLabel(const WindowKey& key);  // "sa-bench/4"

struct Topology {
  std::vector<ExpectedDevice> devices;  // manifest order
  std::vector<WindowKey> windows;       // manifest order
};

// Parses expected_devices and expected_windows. null or absent lists parse as empty (the rules then
// report expected_device_missing / "no expected measurement window"). Any damaged entry is an
// error whose message names it ("expected_devices[2].gpu_index must be a non-negative integer").
Result<Topology> ParseTopology(const Json& manifest);

struct DeviceCheck {
  std::vector<std::string> reasons;  // disk-derived device reasons, deduplicated
  std::vector<std::pair<std::string, std::string>> details;  // (reason, what exactly), found order
  bool valid() const { return reasons.empty(); }
};

// Expected set non-empty and equal to the observed key set; one UUID per key and one key per UUID;
// one role per device; one het group per device and per node.
DeviceCheck CheckDevices(const Topology& topology, const std::vector<DeviceSamples>& observed);

// Roles: device -> its single role, or nothing when roles conflict anywhere.
bool RolesConflict(const Topology& topology);
std::map<std::string, int64_t> RoleCounts(const Topology& topology);

// --expect-role assertions. Failure messages; empty when they hold.
std::vector<std::string> CheckExpectedRoles(const Topology& topology,
                                            const std::map<std::string, int64_t>& expected);
// --require-distinct-het-groups. Failure messages; empty when it holds.
std::vector<std::string> CheckDistinctHetGroups(const Topology& topology);

}  // namespace gpulse::power
