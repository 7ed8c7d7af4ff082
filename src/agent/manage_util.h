// Helpers the management files share (agent_manage.cc, agent_health.cc, agent_policy.cc,
// agent_config.cc): the kinds of the management table, the group a query names, a health watch's
// JSON and the agent's log line. Internal to src/agent.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/result.h"

namespace gpulse::agent {

inline constexpr std::int64_t kNsPerMs = 1'000'000;
inline constexpr const char* kHealth = "health";
inline constexpr const char* kPolicy = "policy";
inline constexpr const char* kConfig = "config";

void Log(const std::string& line);

// The group a query string names ("group", default 0): its id, or why not.
Result<int> GroupParam(const std::map<std::string, std::string>& q);

struct HealthSpec {
  unsigned systems = 0;
  std::int64_t update_ms = 1000;
  std::int64_t keep_age_s = 600;
};

Result<HealthSpec> HealthFromJson(const nlohmann::json& body);
nlohmann::json HealthToJson(unsigned systems, std::int64_t update_ms, std::int64_t keep_age_s);

}  // namespace gpulse::agent
