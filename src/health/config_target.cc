#include "health/config_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpulse::health {
namespace {

using nlohmann::json;

std::string Join(const std::vector<unsigned>& v) {
  std::string out;
  for (unsigned x : v) out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

bool Near(double a, double b) { return std::fabs(a - b) < 0.5; }  // limits are whole watts in mW

}  // namespace

bool ConfigTarget::empty() const {
  return !compute_mode && !ecc && !sync_boost && !app_mem_clock_mhz && !app_sm_clock_mhz &&
         !power_limit_w;
}

std::string ComputeModeName(int mode) {
  switch (mode) {
    case 0:
      return "Unrestricted";
    case 1:
      return "E. Thread";
    case 2:
      return "Prohibited";
    case 3:
      return "E. Process";
  }
  return "";
}

Result<ConfigTarget> ConfigFromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("config: the body must be a JSON object");
  ConfigTarget t;
  for (const auto& [k, v] : j.items()) {
    if (k == "group") continue;
    if (k == "compute_mode") {
      if (!v.is_number_integer())
        return InvalidArgument("config: 'compute_mode' must be 0, 2 or 3");
      long long m = v.get<long long>();
      if (m == 1) {
        return InvalidArgument(
            "config: compute mode 1 (exclusive thread) was removed from NVIDIA's drivers; use 0 "
            "(unrestricted), 2 (prohibited) or 3 (exclusive process)");
      }
      if (m != 0 && m != 2 && m != 3) {
        return InvalidArgument(fmt::format("config: compute mode {} is not 0, 2 or 3", m));
      }
      t.compute_mode = static_cast<int>(m);
    } else if (k == "ecc" || k == "sync_boost") {
      if (!v.is_boolean()) return InvalidArgument("config: '" + k + "' must be true or false");
      (k == "ecc" ? t.ecc : t.sync_boost) = v.get<bool>();
    } else if (k == "app_clocks") {
      if (!v.is_object() || !v.contains("mem_mhz") || !v.contains("sm_mhz") || v.size() != 2 ||
          !v["mem_mhz"].is_number_integer() || !v["sm_mhz"].is_number_integer()) {
        return InvalidArgument("config: 'app_clocks' must be {\"mem_mhz\": N, \"sm_mhz\": N}");
      }
      const long long mem_ll = v["mem_mhz"].get<long long>(), sm_ll = v["sm_mhz"].get<long long>();
      if (mem_ll <= 0 || sm_ll <= 0 || mem_ll > 100'000 || sm_ll > 100'000) {
        return InvalidArgument(
            fmt::format("config: application clocks {},{} MHz are out of range", mem_ll, sm_ll));
      }
      const auto mem = static_cast<unsigned>(mem_ll), sm = static_cast<unsigned>(sm_ll);
      t.app_mem_clock_mhz = mem;
      t.app_sm_clock_mhz = sm;
    } else if (k == "power_limit_w") {
      if (!v.is_number()) return InvalidArgument("config: 'power_limit_w' must be a number");
      double w = v.get<double>();
      if (!std::isfinite(w) || w <= 0 || w > 100'000) {
        return InvalidArgument(fmt::format("config: power limit {} W is out of range", w));
      }
      t.power_limit_w = w;
    } else {
      return InvalidArgument("config: unknown member '" + k + "'");
    }
  }
  if (t.sync_boost) {
    return InvalidArgument(
        "config: sync boost cannot be set: NVML has no call for it (dcgmi shows it Not Supported)");
  }
  if (t.empty()) return InvalidArgument("config: no setting given");
  return t;
}

json ConfigToJson(const ConfigTarget& t) {
  json j = json::object();
  if (t.compute_mode) j["compute_mode"] = *t.compute_mode;
  if (t.ecc) j["ecc"] = *t.ecc;
  if (t.app_mem_clock_mhz && t.app_sm_clock_mhz) {
    j["app_clocks"] = {{"mem_mhz", *t.app_mem_clock_mhz}, {"sm_mhz", *t.app_sm_clock_mhz}};
  }
  if (t.power_limit_w) j["power_limit_w"] = *t.power_limit_w;
  return j;
}

ConfigTarget MergeTargets(const ConfigTarget& earlier, const ConfigTarget& later) {
  ConfigTarget m = earlier;
  if (later.compute_mode) m.compute_mode = later.compute_mode;
  if (later.ecc) m.ecc = later.ecc;
  if (later.app_mem_clock_mhz) {
    m.app_mem_clock_mhz = later.app_mem_clock_mhz;
    m.app_sm_clock_mhz = later.app_sm_clock_mhz;
  }
  if (later.power_limit_w) m.power_limit_w = later.power_limit_w;
  return m;
}

Status CheckTarget(const ConfigTarget& t, const DeviceSettings& s, unsigned gpu) {
  if (t.compute_mode && !s.compute_mode) {
    return Unavailable(fmt::format("GPU {}: the compute mode is not supported", gpu));
  }
  if (t.ecc && !s.ecc_current) {
    return Unavailable(fmt::format("GPU {}: ECC mode is not supported", gpu));
  }
  if (t.power_limit_w) {
    if (!s.min_power_limit_w || !s.max_power_limit_w) {
      return Unavailable(fmt::format("GPU {}: the power limit cannot be set (no range)", gpu));
    }
    if (*t.power_limit_w < *s.min_power_limit_w - 1e-9 ||
        *t.power_limit_w > *s.max_power_limit_w + 1e-9) {
      return InvalidArgument(
          fmt::format("GPU {}: power limit {} W is outside the allowed range "
                      "{}..{} W",
                      gpu, *t.power_limit_w, *s.min_power_limit_w, *s.max_power_limit_w));
    }
  }
  if (t.app_mem_clock_mhz) {
    if (s.supported_mem_clocks_mhz.empty()) {
      return Unavailable(fmt::format("GPU {}: application clocks are not supported", gpu));
    }
    const auto& mems = s.supported_mem_clocks_mhz;
    auto it = std::find(mems.begin(), mems.end(), *t.app_mem_clock_mhz);
    if (it == mems.end()) {
      return InvalidArgument(
          fmt::format("GPU {}: memory clock {} MHz is not supported (allowed: {})", gpu,
                      *t.app_mem_clock_mhz, Join(mems)));
    }
    const std::size_t i = static_cast<std::size_t>(it - mems.begin());
    const auto& sms = i < s.supported_sm_clocks_mhz.size() ? s.supported_sm_clocks_mhz[i]
                                                           : std::vector<unsigned>{};
    if (std::find(sms.begin(), sms.end(), *t.app_sm_clock_mhz) == sms.end()) {
      std::string allowed =
          sms.empty()
              ? "none"
              : fmt::format("{}..{} MHz, {} values", *std::min_element(sms.begin(), sms.end()),
                            *std::max_element(sms.begin(), sms.end()), sms.size());
      return InvalidArgument(fmt::format(
          "GPU {}: SM clock {} MHz is not supported with memory clock {} MHz (allowed: {})", gpu,
          *t.app_sm_clock_mhz, *t.app_mem_clock_mhz, allowed));
    }
  }
  return Status::Ok();
}

std::vector<ConfigSetting> Differences(const ConfigTarget& t, const DeviceSettings& s) {
  std::vector<ConfigSetting> out;
  if (t.compute_mode && s.compute_mode != t.compute_mode)
    out.push_back(ConfigSetting::kComputeMode);
  // ECC: the pending mode is what a set changes; it applies at the next reset.
  if (t.ecc && s.ecc_pending.value_or(s.ecc_current.value_or(!*t.ecc)) != *t.ecc) {
    out.push_back(ConfigSetting::kEcc);
  }
  if (t.app_mem_clock_mhz &&
      (s.app_mem_clock_mhz != t.app_mem_clock_mhz || s.app_sm_clock_mhz != t.app_sm_clock_mhz)) {
    out.push_back(ConfigSetting::kAppClocks);
  }
  if (t.power_limit_w && (!s.power_limit_w || !Near(*s.power_limit_w, *t.power_limit_w))) {
    out.push_back(ConfigSetting::kPowerLimit);
  }
  return out;
}

}  // namespace gpulse::health
