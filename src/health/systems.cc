#include "health/systems.h"

#include <array>

namespace gpulse::health {

std::string_view VerdictKey(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
  }
  return "fail";
}

std::string_view VerdictText(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "Healthy";
    case Verdict::kWarn:
      return "Warning";
    case Verdict::kFail:
      return "Failure";
  }
  return "Failure";
}

Verdict Worst(Verdict a, Verdict b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

const std::vector<Subsystem>& AllSubsystems() {
  static const std::vector<Subsystem> all = {kPcie,  kMemory, kInforom, kThermal,
                                             kPower, kNvlink, kDriver};
  return all;
}

std::string_view SubsystemKey(Subsystem s) {
  switch (s) {
    case kPcie:
      return "pcie";
    case kMemory:
      return "memory";
    case kInforom:
      return "inforom";
    case kThermal:
      return "thermal";
    case kPower:
      return "power";
    case kNvlink:
      return "nvlink";
    case kDriver:
      return "driver";
  }
  return "unknown";
}

std::string_view SubsystemName(Subsystem s) {
  switch (s) {
    case kPcie:
      return "PCIe";
    case kMemory:
      return "Memory";
    case kInforom:
      return "InfoROM";
    case kThermal:
      return "Thermal";
    case kPower:
      return "Power";
    case kNvlink:
      return "NVLink";
    case kDriver:
      return "Driver";
  }
  return "Unknown";
}

Result<unsigned> ParseSubsystems(std::string_view letters) {
  if (letters.empty()) return InvalidArgument("no health subsystems given (letters of 'pmitnda')");
  unsigned mask = 0;
  std::string seen;
  for (char c : letters) {
    if (seen.find(c) != std::string::npos) {
      return InvalidArgument(std::string("health subsystem letter '") + c + "' given twice");
    }
    seen += c;
    switch (c) {
      case 'a':
        mask |= kAllSubsystems;
        break;
      case 'p':
        mask |= kPcie;
        break;
      case 'm':
        mask |= kMemory;
        break;
      case 'i':
        mask |= kInforom;
        break;
      case 't':
        mask |= kThermal | kPower;
        break;
      case 'n':
        mask |= kNvlink;
        break;
      case 'd':
        mask |= kDriver;
        break;
      default:
        return InvalidArgument(std::string("unknown health subsystem letter '") + c +
                               "': use p (PCIe), m (memory), i (InfoROM), t (thermal and power), "
                               "n (NVLink), d (driver) or a (all)");
    }
  }
  return mask;
}

std::string SubsystemLetters(unsigned mask) {
  std::string out;
  if (mask & kPcie) out += 'p';
  if (mask & kMemory) out += 'm';
  if (mask & kInforom) out += 'i';
  if (mask & (kThermal | kPower)) out += 't';
  if (mask & kNvlink) out += 'n';
  if (mask & kDriver) out += 'd';
  return out;
}

std::vector<std::string> SubsystemKeys(unsigned mask) {
  std::vector<std::string> out;
  for (Subsystem s : AllSubsystems()) {
    if (mask & s) out.emplace_back(SubsystemKey(s));
  }
  return out;
}

namespace {

struct XidRow {
  std::uint64_t xid;
  Subsystem system;
  Verdict verdict;
};

// The XIDs whose documented action concerns the GPU rather than the application. Ordered by code.
constexpr auto kXidHealth = std::to_array<XidRow>({
    {48, kMemory, Verdict::kFail},   // double-bit ECC error: reset the GPU
    {61, kDriver, Verdict::kWarn},   // internal micro-controller breakpoint/warning
    {62, kDriver, Verdict::kFail},   // internal micro-controller halt
    {63, kMemory, Verdict::kWarn},   // page retirement or row remapping recorded
    {64, kMemory, Verdict::kFail},   // page retirement or row remapping recording failed
    {74, kNvlink, Verdict::kFail},   // NVLink error
    {79, kPcie, Verdict::kFail},     // the GPU has fallen off the bus
    {92, kMemory, Verdict::kWarn},   // high single-bit ECC error rate
    {94, kMemory, Verdict::kWarn},   // contained ECC error: restart the application
    {95, kMemory, Verdict::kFail},   // uncontained ECC error: reset the GPU
    {119, kDriver, Verdict::kFail},  // GSP RPC timeout
    {120, kDriver, Verdict::kFail},  // GSP error
    {140, kMemory, Verdict::kFail},  // unrecovered ECC error
});

// Errors an application causes: its own fault, not the GPU's health.
constexpr auto kApplicationXids = std::to_array<std::uint64_t>({13, 31, 43, 45, 68, 69});

}  // namespace

std::optional<XidHealth> ClassifyXid(std::uint64_t xid) {
  for (const XidRow& r : kXidHealth) {
    if (r.xid == xid) return XidHealth{r.system, r.verdict};
  }
  for (std::uint64_t a : kApplicationXids) {
    if (a == xid) return std::nullopt;
  }
  // Any other XID is the driver reporting something about the GPU that gpulse's table does not
  // classify: a warning, never silence.
  return XidHealth{kDriver, Verdict::kWarn};
}

}  // namespace gpulse::health
