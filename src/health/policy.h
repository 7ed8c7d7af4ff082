// Policies (DCGM's `dcgmi policy`): conditions on a group's GPUs that, when violated, are reported
// to listeners and may trigger an action. Pure: a PolicyWatcher is fed one GPU's readings and
// answers the violations they show; the agent delivers them and acts.
//
// When a condition fires (docs/health.md, "Policies"):
//   dbe       the volatile double-bit ECC count grew            (value: the new count)
//   pcie      the PCIe replay counter grew                      (value: the replays added)
//   max_pages retired pages (SBE + DBE) reached the limit       (value: the pages)
//   thermal   the temperature went above the limit              (value: °C)
//   power     the power went above the limit                    (value: W)
//   nvlink    an NVLink CRC, replay or recovery counter grew    (value: the errors added)
//   xid       an XID error was raised                           (value: the XID)
//   action    the GPU's recommended action (docs/faults.md) became a new one, of those listed
//             (`actions`; every action when none is listed)       (value: the XID behind it)
// Counters are compared with the previous reading, so what happened before the policy was set is
// not reported. A temperature or power limit fires when the reading crosses above it, and again
// only after it has come back to or below it; the retired-pages limit fires when the count reaches
// it
// ("the maximum number of retired pages that will trigger a violation", as dcgmi says): each
// violation is reported once, not every tick it lasts.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "health/reading.h"

namespace gpulse::health {

// DCGM's policy condition bits (dcgm_structs.h, DCGM_POLICY_COND_*).
enum Condition : unsigned {
  kCondDbe = 0x1,
  kCondPcie = 0x2,
  kCondMaxPages = 0x4,
  kCondThermal = 0x8,
  kCondPower = 0x10,
  kCondNvlink = 0x20,
  kCondXid = 0x40,
  kCondAction = 0x80,  // gpulse's: DCGM has no such condition
};

const std::vector<Condition>& AllConditions();
std::string_view ConditionKey(Condition c);  // "dbe", "pcie", "max_pages", ...
Result<Condition> ConditionFromKey(std::string_view key);

// DCGM's actions and validations (`dcgmi policy --set ACTION,VALIDATION`).
enum class PolicyAction { kNone = 0, kGpuReset = 1 };
enum class PolicyValidation { kNone = 0, kShort = 1, kMedium = 2, kLong = 3 };

struct PolicySpec {
  unsigned conditions = 0;
  std::optional<double> max_temp_c;        // with kCondThermal
  std::optional<double> max_power_w;       // with kCondPower
  std::optional<std::uint64_t> max_pages;  // with kCondMaxPages
  std::vector<std::string> actions;        // with kCondAction: the actions that fire; empty: all
  PolicyAction action = PolicyAction::kNone;
  PolicyValidation validation = PolicyValidation::kNone;
};

// The JSON of the policy API (docs/schema/agent-policy.schema.json): every member checked; a
// wrong type, an unknown member, a limit without its condition (or the reverse), a negative or
// absurd limit, an unknown action, or a validation gpulse cannot run (medium or long: they need
// GPU kernels) fails naming it.
Result<PolicySpec> PolicyFromJson(const nlohmann::json& j);
nlohmann::json PolicyToJson(const PolicySpec& p);

struct Violation {
  Condition condition;
  std::int64_t t_ms = 0;
  double value = 0;
  std::string message;  // dcgmi's words, e.g. "The maximum thermal limit has violated policy ..."
  // kCondXid and kCondAction: the action the XID calls for (kCondXid: NVIDIA's catalogue;
  // kCondAction: the GPU's recommended action) and the catalogue's description of the XID.
  std::string action;
  std::string description;
};

class PolicyWatcher {
 public:
  // The violations `r` shows under `spec`, given the readings before it. The first reading only
  // sets the baseline of the counters and drops its XIDs (the driver's backlog from before the
  // policy); it fires a limit already exceeded.
  std::vector<Violation> Observe(const PolicySpec& spec, const GpuReading& r);

 private:
  void ObserveAction(const PolicySpec& spec, const GpuReading& r,
                     std::vector<Violation>& out) const;
  GpuReading last_;  // the newest value of each counter seen
  std::optional<XidAction> last_action_;  // the recommended action of the last reading with one
  bool above_temp_ = false, above_power_ = false, above_pages_ = false;
  bool primed_ = false;
};

}  // namespace gpulse::health
