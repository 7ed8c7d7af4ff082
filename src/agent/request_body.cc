#include "agent/request_body.h"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json_limits.h"
#include "core/utf8.h"

namespace gpulse::agent {
namespace {

using json = nlohmann::json;

// A request body is a few small members: these bounds keep a hostile one cheap to refuse.
constexpr JsonLimits kBodyLimits{.max_bytes = 1u << 20, .max_depth = 32, .max_values = 100'000};

struct RepeatedKey : std::runtime_error {
  explicit RepeatedKey(const std::string& key)
      : std::runtime_error("the request body gives the key \"" + key + "\" twice in one object") {}
};

}  // namespace

Result<json> ParseRequestBody(std::string_view text) {
  if (text.empty()) return json::object();
  if (!IsValidUtf8(text)) return InvalidArgument("the request body is not valid UTF-8");
  if (auto shape = CheckJsonShape(text, kBodyLimits)) {
    return InvalidArgument("the request body is too large: " + *shape);
  }
  std::vector<std::set<std::string>> open;  // the keys seen in each object being parsed
  auto check = [&open](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second) {
          throw RepeatedKey(parsed.get<std::string>());
        }
        break;
      default:
        break;
    }
    return true;
  };
  json body;
  try {
    body = json::parse(text, check);
  } catch (const RepeatedKey& e) {
    return InvalidArgument(e.what());
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    return InvalidArgument(std::string("the request body is not JSON: ") + e.what());
  }
  if (!body.is_object()) return InvalidArgument("the request body is not a JSON object");
  return body;
}

}  // namespace gpulse::agent
