// Internal to the scenario parser: the parsers of one device (with `device_defaults` merged under
// it), of its parts (load, MIG, processes), of the fault list and of one injected fault. Each
// throws ScenarioError through the YamlCheck it is given; ParseScenario (ParseFaultText for an
// injected fault) catches it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "scenario.h"
#include "yaml_check.h"

namespace gpulse::sim {

// The keys a device (and `device_defaults`) may have.
extern const std::initializer_list<std::string_view> kDeviceKeys;

// A device's keys looked up in the device first, then in `device_defaults`. A key found in the
// defaults keeps its "device_defaults.x" path, so messages point at the line that set it.
class DeviceFields {
 public:
  DeviceFields(At device, At defaults)
      : device_(std::move(device)), defaults_(std::move(defaults)) {}
  At Get(std::string_view key) const;
  const At& device() const { return device_; }

 private:
  At device_;
  At defaults_;
};

DeviceSpec ParseDevice(const YamlCheck& check, const DeviceFields& fields, unsigned index,
                       const std::string& scenario_name);

// Parts of a device; `dev` holds the fields parsed before them (memory sizes, idle power).
Load ParseLoad(const YamlCheck& check, const At& at, const DeviceSpec& dev);
MigConfig ParseMig(const YamlCheck& check, const At& at, const DeviceSpec& dev);
std::vector<Process> ParseProcesses(const YamlCheck& check, const At& at, const DeviceSpec& dev);
CallSet ParseCallList(const YamlCheck& check, const At& at);

std::vector<Fault> ParseFaults(const YamlCheck& check, const At& at,
                               const std::vector<DeviceSpec>& devices);

// Where and when a fault injected at run time (gpulseSimInjectFault) applies.
struct Injection {
  unsigned device = 0;  // REQUIRES: < the device count
  double now = 0;       // the simulator's time at the injection
};

// One injected fault: a map in the grammar of a `faults:` entry (same kinds, keys, values, checks
// and messages) without `device` and `at`, which `inject` gives, and with `duration_s` (> 0:
// until = now + duration_s) instead of `until`.
Fault ParseInjectedFault(const YamlCheck& check, const At& item,
                         const std::vector<DeviceSpec>& devices, const Injection& inject);

}  // namespace gpulse::sim
