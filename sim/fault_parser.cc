// The `faults:` list: one entry per injected event or condition; and one fault injected at run
// time (gpulseSimInjectFault), parsed by the same code.
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "device_parser.h"
#include "gpu/nvml/nvml_abi.h"

namespace gpulse::sim {
namespace {

constexpr double kMaxTime = 1e9;
constexpr int64_t kMaxCount = int64_t{1} << 40;

struct KindInfo {
  std::string_view name;
  FaultKind kind;
  std::initializer_list<std::string_view> keys;  // allowed keys, common ones included
};

const std::array<KindInfo, 12> kKinds = {{
    {"xid", FaultKind::kXid, {"at", "device", "kind", "xid"}},
    {"not_supported", FaultKind::kNotSupported, {"at", "until", "device", "kind", "calls"}},
    {"no_permission", FaultKind::kNoPermission, {"at", "device", "kind"}},
    {"gpu_lost", FaultKind::kGpuLost, {"at", "device", "kind"}},
    {"ecc", FaultKind::kEcc, {"at", "device", "kind", "sbe", "dbe"}},
    {"throttle", FaultKind::kThrottle, {"at", "until", "device", "kind", "reasons"}},
    {"pcie_replay", FaultKind::kPcieReplay, {"at", "device", "kind", "count"}},
    {"retired_pages", FaultKind::kRetiredPages, {"at", "device", "kind", "sbe", "dbe", "pending"}},
    {"remapped_rows",
     FaultKind::kRemappedRows,
     {"at", "device", "kind", "correctable", "uncorrectable", "failure", "pending"}},
    {"gpm", FaultKind::kGpm, {"at", "until", "device", "kind", "mode"}},
    {"nvlink_errors",
     FaultKind::kNvlinkErrors,
     {"at", "device", "kind", "nvlink_crc_flit", "nvlink_crc_data", "nvlink_replay",
      "nvlink_recovery"}},
    {"inforom_corrupt", FaultKind::kInforomCorrupt, {"at", "until", "device", "kind"}},
}};

const std::array<std::pair<std::string_view, GpmFaultMode>, 3> kGpmModes = {{
    {"fail", GpmFaultMode::kFail},
    {"zero", GpmFaultMode::kZero},
    {"out_of_range", GpmFaultMode::kOutOfRange},
}};

const std::array<std::pair<std::string_view, unsigned long long>, 8> kReasons = {{
    {"applications_clocks_setting", nvmlClocksEventReasonApplicationsClocksSetting},
    {"sw_power_cap", nvmlClocksEventReasonSwPowerCap},
    {"hw_slowdown", nvmlClocksThrottleReasonHwSlowdown},
    {"sync_boost", nvmlClocksEventReasonSyncBoost},
    {"sw_thermal_slowdown", nvmlClocksEventReasonSwThermalSlowdown},
    {"hw_thermal_slowdown", nvmlClocksThrottleReasonHwThermalSlowdown},
    {"hw_power_brake_slowdown", nvmlClocksThrottleReasonHwPowerBrakeSlowdown},
    {"display_clock_setting", nvmlClocksEventReasonDisplayClockSetting},
}};

const KindInfo& FindKind(const YamlCheck& check, const At& at) {
  std::string name = check.String(at);
  std::vector<std::string_view> names;
  for (const KindInfo& k : kKinds) {
    if (k.name == name) return k;
    names.push_back(k.name);
  }
  check.Fail(at, "unknown fault kind '" + name + "'" + Suggestion(name, names) +
                     "; known: " + Join(names));
}

unsigned long long ParseReasons(const YamlCheck& check, const At& at) {
  check.ExpectSeq(at);
  if (at.node.size() == 0) check.Fail(at, "list at least one reason");
  unsigned long long mask = 0;
  for (size_t i = 0; i < at.node.size(); ++i) {
    At item = YamlCheck::Element(at, i);
    std::string name = check.String(item);
    unsigned long long bit = 0;
    std::vector<std::string_view> names;
    for (const auto& [n, b] : kReasons) {
      if (n == name) bit = b;
      names.push_back(n);
    }
    if (bit == 0) {
      check.Fail(item, "unknown throttle reason '" + name + "'" + Suggestion(name, names) +
                           "; known: " + Join(names));
    }
    mask |= bit;
  }
  return mask;
}

GpmFaultMode ParseGpmMode(const YamlCheck& check, const At& at) {
  std::string name = check.String(at);
  std::vector<std::string_view> names;
  for (const auto& [n, mode] : kGpmModes) {
    if (n == name) return mode;
    names.push_back(n);
  }
  check.Fail(at, "unknown gpm fault mode '" + name + "'" + Suggestion(name, names) +
                     "; known: " + Join(names));
}

uint64_t CountOr0(const YamlCheck& check, const At& item, std::string_view key) {
  At v = YamlCheck::Child(item, key);
  return v.present ? static_cast<uint64_t>(check.Integer(v, 0, kMaxCount)) : 0;
}

bool BoolOrFalse(const YamlCheck& check, const At& item, std::string_view key) {
  At v = YamlCheck::Child(item, key);
  return v.present && check.Bool(v);
}

void ParseKindFields(const YamlCheck& check, const At& item, Fault& f) {
  switch (f.kind) {
    case FaultKind::kXid: {
      At xid = YamlCheck::Child(item, "xid");
      check.Require(xid);
      f.xid = static_cast<unsigned long long>(check.Integer(xid, 1, 65535));
      break;
    }
    case FaultKind::kNotSupported: {
      At calls = YamlCheck::Child(item, "calls");
      check.Require(calls);
      f.calls = ParseCallList(check, calls);
      if (f.calls.none()) check.Fail(calls, "list at least one call");
      break;
    }
    case FaultKind::kThrottle: {
      At reasons = YamlCheck::Child(item, "reasons");
      check.Require(reasons);
      f.reasons = ParseReasons(check, reasons);
      break;
    }
    case FaultKind::kEcc:
    case FaultKind::kRetiredPages:
      f.sbe = CountOr0(check, item, "sbe");
      f.dbe = CountOr0(check, item, "dbe");
      f.pending = BoolOrFalse(check, item, "pending");
      break;
    case FaultKind::kPcieReplay: {
      At count = YamlCheck::Child(item, "count");
      check.Require(count);
      f.count = static_cast<uint64_t>(check.Integer(count, 1, kMaxCount));
      break;
    }
    case FaultKind::kRemappedRows:
      f.correctable = CountOr0(check, item, "correctable");
      f.uncorrectable = CountOr0(check, item, "uncorrectable");
      f.failure = BoolOrFalse(check, item, "failure");
      f.pending = BoolOrFalse(check, item, "pending");
      break;
    case FaultKind::kGpm: {
      At mode = YamlCheck::Child(item, "mode");
      check.Require(mode);
      f.gpm_mode = ParseGpmMode(check, mode);
      break;
    }
    case FaultKind::kNvlinkErrors:
      f.nvlink_crc_flit = CountOr0(check, item, "nvlink_crc_flit");
      f.nvlink_crc_data = CountOr0(check, item, "nvlink_crc_data");
      f.nvlink_replay = CountOr0(check, item, "nvlink_replay");
      f.nvlink_recovery = CountOr0(check, item, "nvlink_recovery");
      break;
    case FaultKind::kNoPermission:
    case FaultKind::kGpuLost:
    case FaultKind::kInforomCorrupt:
      break;
  }
}

// A fault on hardware the device does not have could never show; refuse it rather than ignore it.
void CheckDeviceHasIt(const YamlCheck& check, const At& kind_at, const Fault& f,
                      const DeviceSpec& dev) {
  bool needs_ecc = f.kind == FaultKind::kEcc || f.kind == FaultKind::kRetiredPages ||
                   f.kind == FaultKind::kRemappedRows;
  if (needs_ecc && !dev.ecc) {
    check.Fail(kind_at, check.String(kind_at) + " fault on a device with ecc: false");
  }
  if (f.kind == FaultKind::kGpm && !dev.gpm) {
    check.Fail(kind_at, "gpm fault on a device with gpm: false");
  }
  if (f.kind == FaultKind::kNvlinkErrors && dev.nvlink_links == 0) {
    check.Fail(kind_at, "nvlink_errors fault on a device with nvlink_links: 0");
  }
}

bool AllowsUntil(const KindInfo& info) {
  for (std::string_view k : info.keys) {
    if (k == "until") return true;
  }
  return false;
}

// The kinds that allow `until` (for messages): "not_supported, throttle, gpm, inforom_corrupt".
std::string KindsWithUntil() {
  std::vector<std::string_view> names;
  for (const KindInfo& k : kKinds) {
    if (AllowsUntil(k)) names.push_back(k.name);
  }
  return Join(names);
}

// One fault. A scenario's (`inject` null) has `at` and `device`; an injected one
// (gpulseSimInjectFault) has neither, takes effect at inject->now on inject->device, and has
// `duration_s` instead of `until`. Everything else (the kinds, their keys, values and checks) is
// the same code for both.
Fault ParseFault(const YamlCheck& check, const At& item, const std::vector<DeviceSpec>& devices,
                 const Injection* inject) {
  check.ExpectMap(item);
  if (inject != nullptr) {
    if (At a = YamlCheck::Child(item, "device"); a.present) {
      check.Fail(a, "not allowed in an injected fault: the GPU index argument names the device");
    }
    if (At a = YamlCheck::Child(item, "at"); a.present) {
      check.Fail(a, "not allowed in an injected fault: it takes effect now (t = " +
                        FormatNumber(inject->now) + ")");
    }
    if (At a = YamlCheck::Child(item, "until"); a.present) {
      check.Fail(a, "not allowed in an injected fault: give duration_s (seconds from now)");
    }
  }
  At kind_at = YamlCheck::Child(item, "kind");
  check.Require(kind_at);
  const KindInfo& info = FindKind(check, kind_at);

  Fault f;
  f.kind = info.kind;
  if (inject != nullptr) {
    At duration = YamlCheck::Child(item, "duration_s");
    if (duration.present && !AllowsUntil(info)) {
      check.Fail(duration, "not allowed for kind " + std::string(info.name) + " (only " +
                               KindsWithUntil() + " faults last a duration)");
    }
    std::vector<std::string_view> keys;
    for (std::string_view k : info.keys) {
      if (k == "at" || k == "device") continue;
      keys.push_back(k == "until" ? "duration_s" : k);
    }
    check.CheckKeys(item, keys);
    f.at = inject->now;
    if (duration.present) {
      const double d = check.Number(duration, 0, kMaxTime);
      if (d <= 0) check.Fail(duration, "must be greater than 0");
      f.until = inject->now + d;
    }
    f.device = inject->device;  // the caller checked it against the device count
  } else {
    check.CheckKeys(item, info.keys);
    At at = YamlCheck::Child(item, "at");
    check.Require(at);
    f.at = check.Number(at, 0, kMaxTime);
    At until = YamlCheck::Child(item, "until");
    if (until.present) {
      f.until = check.Number(until, 0, kMaxTime);
      if (*f.until <= f.at) check.Fail(until, "must be later than at (" + FormatNumber(f.at) + ")");
    }
    At device = YamlCheck::Child(item, "device");
    check.Require(device);
    int64_t n = static_cast<int64_t>(devices.size());
    int64_t index = check.Integer(device, 0, 1 << 20);
    if (index >= n) {
      check.Fail(device, "device index " + std::to_string(index) +
                             " is out of range (the scenario has " + std::to_string(n) +
                             " device" + (n == 1 ? "" : "s") + ")");
    }
    f.device = static_cast<unsigned>(index);
  }
  ParseKindFields(check, item, f);
  CheckDeviceHasIt(check, kind_at, f, devices[f.device]);
  return f;
}

}  // namespace

std::vector<Fault> ParseFaults(const YamlCheck& check, const At& at,
                               const std::vector<DeviceSpec>& devices) {
  check.ExpectSeq(at);
  std::vector<Fault> out;
  for (size_t i = 0; i < at.node.size(); ++i) {
    out.push_back(ParseFault(check, YamlCheck::Element(at, i), devices, nullptr));
  }
  return out;
}

Fault ParseInjectedFault(const YamlCheck& check, const At& item,
                         const std::vector<DeviceSpec>& devices, const Injection& inject) {
  return ParseFault(check, item, devices, &inject);
}

}  // namespace gpulse::sim
