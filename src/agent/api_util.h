// Helpers the management API's files share (agent_api.cc, agent_manage.cc, agent_health.cc,
// agent_policy.cc, agent_config.cc): replies, query strings and body members. Internal to
// src/agent.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "core/result.h"

namespace gpulse::agent {

struct Agent::Route {
  static Agent::Reply Error(int status, std::string message) {
    Agent::Reply r;
    r.status = status;
    r.body = {{"error", std::move(message)}};
    return r;
  }
  static Agent::Reply FromError(const gpulse::Error& e) {
    int status = e.code == ErrorCode::kInvalidArgument ? 400
                 : e.code == ErrorCode::kNotFound      ? 404
                                                       : 500;
    return Error(status, e.message);
  }
  static Agent::Reply Ok(nlohmann::json body, int status = 200) {
    Agent::Reply r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
};

// A group, watch or pid id in a path: decimal digits, at most 2^31 - 1.
std::optional<int> ParseId(const std::string& s);
// The query string of `target`, %-decoded; a malformed escape fails.
Result<std::map<std::string, std::string>> ParseQuery(const std::string& target);
// A whole-number member of a request body: absent gives `def`; anything but an integer in
// [lo, hi] is refused with a message naming the member.
Result<std::int64_t> IntField(const nlohmann::json& body, const char* key, std::int64_t def,
                              std::int64_t lo, std::int64_t hi);

}  // namespace gpulse::agent
