#include "scenario_parser.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "builtin_scenarios.h"
#include "device_parser.h"
#include "sys/regular_file.h"
#include "sys/strict_yaml.h"
#include "yaml_check.h"

namespace gpulse::sim {
namespace {

constexpr size_t kMaxDevices = 64;
constexpr size_t kMaxScenarioBytes = 4 << 20;  // 64 devices with long load curves fit in far less

std::string VersionString(const YamlCheck& check, const At& at, const std::string& fallback) {
  if (!at.present) return fallback;
  std::string v = check.String(at);
  if (v.empty() || v.size() >= 80) check.Fail(at, "must be 1 to 79 characters");
  return v;
}

// UUIDs and bus ids must be unique: gpulse keys devices by them.
void CheckDistinct(const YamlCheck& check, const At& devices,
                   const std::vector<DeviceSpec>& specs) {
  std::map<std::string, size_t> seen;
  auto claim = [&](const std::string& id, size_t i, std::string_view what) {
    auto [it, fresh] = seen.emplace(id, i);
    if (!fresh) {
      check.Fail(YamlCheck::Element(devices, i), std::string(what) + " '" + id +
                                                     "' is also used by devices[" +
                                                     std::to_string(it->second) + "]");
    }
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    claim(specs[i].uuid, i, "uuid");
    claim(specs[i].pci_bus_id, i, "pci_bus_id");
    for (const MigInstance& m : specs[i].mig.instances) claim(m.uuid, i, "MIG uuid");
  }
}

Scenario ParseDocument(const YamlCheck& check, const YAML::Node& doc,
                       const std::string& default_name) {
  At root = YamlCheck::Root(doc);
  if (!doc.IsDefined() || doc.IsNull()) check.Fail(root, "the scenario is empty");
  check.CheckKeys(root, {"name", "description", "driver_version", "nvml_version", "device_defaults",
                         "devices", "faults"});
  Scenario s;
  At name = YamlCheck::Child(root, "name");
  s.name = name.present ? check.String(name) : default_name;
  if (s.name.empty() || s.name.size() > 64) check.Fail(name, "must be 1 to 64 characters");
  if (At d = YamlCheck::Child(root, "description"); d.present) s.description = check.String(d);
  s.driver_version =
      VersionString(check, YamlCheck::Child(root, "driver_version"), s.driver_version);
  s.nvml_version = VersionString(check, YamlCheck::Child(root, "nvml_version"), s.nvml_version);

  At defaults = YamlCheck::Child(root, "device_defaults");
  if (defaults.present) check.CheckKeys(defaults, kDeviceKeys);
  At devices = YamlCheck::Child(root, "devices");
  check.Require(devices);
  check.ExpectSeq(devices);
  if (devices.node.size() == 0 || devices.node.size() > kMaxDevices) {
    check.Fail(devices, "list 1 to " + std::to_string(kMaxDevices) + " devices");
  }
  for (size_t i = 0; i < devices.node.size(); ++i) {
    DeviceFields fields(YamlCheck::Element(devices, i), defaults);
    s.devices.push_back(ParseDevice(check, fields, static_cast<unsigned>(i), s.name));
  }
  CheckDistinct(check, devices, s.devices);
  if (At faults = YamlCheck::Child(root, "faults"); faults.present) {
    s.faults = ParseFaults(check, faults, s.devices);
  }
  return s;
}

std::string BuiltinNames() {
  std::vector<std::string_view> names;
  for (const BuiltinScenario& b : BuiltinScenarios()) names.push_back(b.name);
  return Join(names);
}

}  // namespace

namespace {

// The boundary every YAML text the simulator reads goes through: its shape bounded, repeated keys
// refused, then fn(check, doc); any error, thrown or not, becomes the error value.
template <typename T, typename Fn>
Result<T> ParseText(std::string_view text, const std::string& source, Fn&& fn) {
  YamlCheck check(source);
  try {
    // Bounded before a node is built: a scenario of a million GPUs is refused by its size here,
    // not after 3 GB of nodes, long before the 64-GPU limit is checked.
    if (auto shape = yaml::CheckShape(text)) {
      return InvalidArgument(source + ":" + std::to_string(shape->line) + ": " + shape->what + ": refused");
    }
    YAML::Node doc = YAML::Load(std::string(text));
    if (auto dup = yaml::FindDuplicateKey(doc)) {
      if (dup->key.front() == '<') {
        return InvalidArgument(source + ":" + std::to_string(dup->line) + ": " + yaml::Describe(*dup));
      }
      // The simulator's own message form: file:line:column: key.path: problem.
      std::string key = dup->path.empty() ? dup->key : dup->path + "." + dup->key;
      return InvalidArgument(source + ":" + std::to_string(dup->line) + ":" + std::to_string(dup->column) +
                             ": " + key + ": duplicate key (first at line " + std::to_string(dup->first_line) +
                             "); a repeated key is refused, never silently dropped");
    }
    return fn(check, doc);
  } catch (const ScenarioError& e) {
    return InvalidArgument(e.what());
  } catch (const YAML::Exception& e) {
    std::string where = source;
    if (e.mark.line >= 0) {
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    }
    return InvalidArgument(where + ": YAML error: " + e.msg);
  } catch (const std::exception& e) {
    return InvalidArgument(source + ": " + e.what());
  }
}

}  // namespace

Result<Scenario> ParseScenario(std::string_view text, const std::string& source,
                               const std::string& default_name) {
  return ParseText<Scenario>(text, source, [&](const YamlCheck& check, const YAML::Node& doc) {
    return ParseDocument(check, doc, default_name);
  });
}

Result<Fault> ParseInjectedFaultText(std::string_view text, const std::vector<DeviceSpec>& devices,
                                     unsigned device, double now) {
  auto parse = [&](const YamlCheck& check, const YAML::Node& doc) {
    At root = YamlCheck::Root(doc);
    if (!doc.IsDefined() || doc.IsNull()) {
      check.Fail(root, "the fault is empty: give a map such as {kind: xid, xid: 79}");
    }
    return ParseInjectedFault(check, root, devices, Injection{device, now});
  };
  return ParseText<Fault>(text, "injected fault", parse);
}

Result<Scenario> LoadScenario(const char* selector) {
  if (selector == nullptr || *selector == '\0') {
    return InvalidArgument("GPULSE_SIM_SCENARIO is not set: set it to a built-in scenario (" +
                           BuiltinNames() +
                           ") or to the path of a scenario YAML file (format: sim/README.md)");
  }
  std::string value = selector;
  for (const BuiltinScenario& b : BuiltinScenarios()) {
    if (b.name == value) return ParseScenario(b.yaml, "built-in scenario '" + value + "'", value);
  }
  std::error_code ec;
  if (std::filesystem::is_directory(value, ec)) {
    return InvalidArgument("scenario path '" + value + "' is a directory, not a YAML file");
  }
  // A regular file of bounded size, read before YAML sees it: a scenario listing 10^6 GPUs used to
  // be parsed whole (3 GB) before the 64-device limit was checked, and a FIFO waited on forever.
  auto text = sys::ReadRegularFile(value, kMaxScenarioBytes);
  if (!text) {
    bool looks_like_path =
        value.find('/') != std::string::npos || value.ends_with(".yaml") || value.ends_with(".yml");
    if (text.error().code != ErrorCode::kNotFound || looks_like_path) {
      return Error{text.error().code, "cannot read scenario file '" + value + "': " + text.error().message};
    }
    return NotFound("unknown scenario '" + value + "': not a built-in scenario (" + BuiltinNames() +
                    ") and no file by that name");
  }
  return ParseScenario(*text, value, std::filesystem::path(value).stem().string());
}

}  // namespace gpulse::sim
