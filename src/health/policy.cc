#include "health/policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/xid_catalogue.h"

namespace gpulse::health {
namespace {

using nlohmann::json;

struct ConditionRow {
  Condition c;
  std::string_view key;
};

const ConditionRow kConditions[] = {
    {kCondDbe, "dbe"},         {kCondPcie, "pcie"},     {kCondMaxPages, "max_pages"},
    {kCondThermal, "thermal"}, {kCondPower, "power"},   {kCondNvlink, "nvlink"},
    {kCondXid, "xid"},         {kCondAction, "action"},
};

Result<double> Limit(const json& j, const char* key, double max) {
  const json& v = j.at(key);
  if (!v.is_number()) return InvalidArgument(std::string("policy: '") + key + "' must be a number");
  double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0 || d > max) {
    return InvalidArgument(fmt::format("policy: '{}' {} is out of range (0, {}]", key, d, max));
  }
  return d;
}

// How much a counter grew since the last reading that had it; 0 when either is missing.
double Grew(const std::optional<double>& before, const std::optional<double>& now) {
  if (!before || !now || *now <= *before) return 0;
  return *now - *before;
}

}  // namespace

const std::vector<Condition>& AllConditions() {
  static const std::vector<Condition> all = {kCondDbe,   kCondPcie,   kCondMaxPages, kCondThermal,
                                             kCondPower, kCondNvlink, kCondXid,      kCondAction};
  return all;
}

std::string_view ConditionKey(Condition c) {
  for (const auto& r : kConditions) {
    if (r.c == c) return r.key;
  }
  return "unknown";
}

Result<Condition> ConditionFromKey(std::string_view key) {
  for (const auto& r : kConditions) {
    if (r.key == key) return r.c;
  }
  return InvalidArgument(fmt::format(
      "policy: unknown condition '{}' (dbe, pcie, max_pages, thermal, power, nvlink, xid, action)",
      key));
}

Result<PolicySpec> PolicyFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("policy: the body must be a JSON object");
  static const char* kKnown[] = {"group",     "conditions", "max_temp_c", "max_power_w",
                                 "max_pages", "action",     "validation", "actions"};
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (const char* n : kKnown) known = known || k == n;
    if (!known) return InvalidArgument("policy: unknown member '" + k + "'");
  }
  PolicySpec p;
  if (!j.contains("conditions") || !j.at("conditions").is_array()) {
    return InvalidArgument("policy: 'conditions' must be an array of condition names");
  }
  for (const json& c : j.at("conditions")) {
    if (!c.is_string()) return InvalidArgument("policy: every condition must be a string");
    auto cond = ConditionFromKey(c.get<std::string>());
    if (!cond) return cond.error();
    if (p.conditions & *cond) {
      return InvalidArgument("policy: condition '" + c.get<std::string>() + "' given twice");
    }
    p.conditions |= *cond;
  }
  if (p.conditions == 0) return InvalidArgument("policy: no condition given");
  struct LimitRow {
    const char* key;
    Condition cond;
    double max;
  };
  for (const LimitRow& l :
       {LimitRow{"max_temp_c", kCondThermal, 200}, LimitRow{"max_power_w", kCondPower, 100'000},
        LimitRow{"max_pages", kCondMaxPages, 1'000'000}}) {
    const bool has = j.contains(l.key), wants = (p.conditions & l.cond) != 0;
    if (has != wants) {
      return InvalidArgument(fmt::format("policy: '{}' goes with the '{}' condition, {}", l.key,
                                         ConditionKey(l.cond),
                                         has ? "which is not set" : "which needs it"));
    }
    if (!has) continue;
    auto v = Limit(j, l.key, l.max);
    if (!v) return v.error();
    if (l.cond == kCondThermal) p.max_temp_c = *v;
    if (l.cond == kCondPower) p.max_power_w = *v;
    if (l.cond == kCondMaxPages) {
      if (*v != std::floor(*v))
        return InvalidArgument("policy: 'max_pages' must be a whole number");
      p.max_pages = static_cast<std::uint64_t>(*v);
    }
  }
  if (j.contains("actions")) {
    if (!(p.conditions & kCondAction)) {
      return InvalidArgument(
          "policy: 'actions' goes with the 'action' condition, which is not set");
    }
    const json& a = j.at("actions");
    if (!a.is_array() || a.empty()) {
      return InvalidArgument(
          "policy: 'actions' must be a non-empty array of action names (leave it out for every "
          "action)");
    }
    for (const json& name : a) {
      if (!name.is_string() || FindAction(name.get<std::string>()) == nullptr ||
          name.get<std::string>() == kActionIgnore) {
        return InvalidArgument(
            fmt::format("policy: 'actions': {} is not a recommended action (gpulse xid lists them; "
                        "docs/faults.md)",
                        name.dump()));
      }
      p.actions.push_back(name.get<std::string>());
    }
  }
  auto small = [&](const char* key, int max) -> Result<int> {
    if (!j.contains(key)) return 0;
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > max) {
      return InvalidArgument(fmt::format("policy: '{}' must be an integer 0..{}", key, max));
    }
    return static_cast<int>(v.get<long long>());
  };
  auto action = small("action", 1);
  if (!action) return action.error();
  auto validation = small("validation", 3);
  if (!validation) return validation.error();
  if (*validation >= 2) {
    return InvalidArgument(
        "policy: validation 2 (medium) and 3 (long) run diagnostics levels 2 and 3, which need GPU "
        "kernels gpulse does not have; use 0 (none) or 1 (short: level-1 diagnostics)");
  }
  p.action = static_cast<PolicyAction>(*action);
  p.validation = static_cast<PolicyValidation>(*validation);
  return p;
}

json PolicyToJson(const PolicySpec& p) {
  json conditions = json::array();
  for (Condition c : AllConditions()) {
    if (p.conditions & c) conditions.push_back(ConditionKey(c));
  }
  json j = {{"conditions", conditions},
            {"action", static_cast<int>(p.action)},
            {"validation", static_cast<int>(p.validation)}};
  if (p.max_temp_c) j["max_temp_c"] = *p.max_temp_c;
  if (p.max_power_w) j["max_power_w"] = *p.max_power_w;
  if (p.max_pages) j["max_pages"] = *p.max_pages;
  if (!p.actions.empty()) j["actions"] = p.actions;
  return j;
}

std::vector<Violation> PolicyWatcher::Observe(const PolicySpec& spec, const GpuReading& r) {
  std::vector<Violation> out;
  auto fire = [&](Condition c, double value, std::string message) {
    if (spec.conditions & c) out.push_back({c, r.t_ms, value, std::move(message), "", ""});
  };
  auto described = [](std::uint64_t xid) {
    const XidEntry* e = FindXid(xid);
    return e != nullptr ? std::string(e->description) : std::string();
  };
  for (std::uint64_t x : primed_ ? r.xids : std::vector<std::uint64_t>{}) {
    fire(kCondXid, static_cast<double>(x),
         fmt::format("An XID error has violated policy manager values. XID: {}", x));
    if (!out.empty() && out.back().condition == kCondXid) {
      out.back().action = std::string(CatalogueAction(x).name);
      out.back().description = described(x);
    }
  }
  if (r.action) {
    ObserveAction(spec, r, out);
    last_action_ = r.action;
  }
  if (r.lost) {
    primed_ = true;
    return out;
  }
  if (double d = Grew(last_.ecc_dbe_volatile, r.ecc_dbe_volatile); d > 0) {
    fire(kCondDbe, *r.ecc_dbe_volatile,
         fmt::format("A double-bit ECC error has violated policy manager values. DBE count: {}",
                     *r.ecc_dbe_volatile));
  }
  if (double d = Grew(last_.pcie_replay, r.pcie_replay); d > 0) {
    fire(kCondPcie, d,
         fmt::format("PCIe replay errors have violated policy manager values. Replays: {}", d));
  }
  double nvlink = Grew(last_.nvlink_crc_flit, r.nvlink_crc_flit) +
                  Grew(last_.nvlink_crc_data, r.nvlink_crc_data) +
                  Grew(last_.nvlink_replay, r.nvlink_replay) +
                  Grew(last_.nvlink_recovery, r.nvlink_recovery);
  if (nvlink > 0) {
    fire(kCondNvlink, nvlink,
         fmt::format("NVLink errors have violated policy manager values. Errors: {}", nvlink));
  }
  primed_ = true;
  // Limits: fire on the crossing, re-arm at or below the limit.
  auto limit = [&](Condition c, const std::optional<double>& reading,
                   const std::optional<double>& max, bool inclusive, bool& above, const char* what,
                   const char* unit) {
    if (!reading || !max) return;
    const bool over = inclusive ? *reading >= *max : *reading > *max;
    if (over && !above) {
      fire(c, *reading,
           fmt::format("The maximum {} limit has violated policy manager values. {}: {}", what,
                       unit, *reading));
    }
    above = over;
  };
  limit(kCondThermal, r.temperature_c, spec.max_temp_c, false, above_temp_, "thermal",
        "Temperature");
  limit(kCondPower, r.power_w, spec.max_power_w, false, above_power_, "power", "Power");
  std::optional<double> pages;
  if (r.retired_sbe || r.retired_dbe) pages = r.retired_sbe.value_or(0) + r.retired_dbe.value_or(0);
  std::optional<double> max_pages;
  if (spec.max_pages) max_pages = static_cast<double>(*spec.max_pages);
  limit(kCondMaxPages, pages, max_pages, true, above_pages_, "retired pages", "Retired pages");
  KeepNewest(last_, r);
  return out;
}

// A new recommended action (another action, or the same raised again by a newer XID) fires; one
// already pending when the policy starts fires at its first reading, as a limit already exceeded
// does.
void PolicyWatcher::ObserveAction(const PolicySpec& spec, const GpuReading& r,
                                  std::vector<Violation>& out) const {
  const XidAction& a = *r.action;
  if (!(spec.conditions & kCondAction) || a.action == "NONE") return;
  if (last_action_ && last_action_->action == a.action && last_action_->xid == a.xid &&
      last_action_->t_unix_ns == a.t_unix_ns) {
    return;
  }
  if (!spec.actions.empty() &&
      std::find(spec.actions.begin(), spec.actions.end(), a.action) == spec.actions.end()) {
    return;
  }
  Violation v{kCondAction,
              r.t_ms,
              static_cast<double>(a.xid),
              fmt::format("The recommended action {} (XID {}{}) has violated policy manager "
                          "values.",
                          a.action, a.xid, a.from_driver ? ", the driver's" : ""),
              a.action,
              a.description};
  out.push_back(std::move(v));
}

}  // namespace gpulse::health
