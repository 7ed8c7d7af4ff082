// The JSON body of a management API request (POST, PUT), checked before any route reads it: valid
// UTF-8, within the shape limits (core/json_limits.h), JSON, an object, and no key given twice in
// one object (the last would silently win, where every YAML reader of gpulse refuses a repeated
// key). Each refusal names what is wrong; the agent answers it 400.
//
// Thread-safe: a pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/result.h"

namespace gpulse::agent {

// An empty body is an empty object.
Result<nlohmann::json> ParseRequestBody(std::string_view text);

}  // namespace gpulse::agent
