#include "core/json_limits.h"

namespace gpulse {

std::optional<std::string> CheckJsonShape(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return "larger than " + std::to_string(limits.max_bytes) + " bytes";
  }
  bool in_string = false;
  int depth = 0;
  // Every value but the first is preceded by '[' or ',' (an array element) or ':' (a member), so
  // counting those bounds the number of values from above.
  std::uint64_t values = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          return "nesting deeper than " + std::to_string(limits.max_depth) + " levels";
        }
        [[fallthrough]];
      case ',':
      case ':':
        if (++values > limits.max_values) {
          return "more than " + std::to_string(limits.max_values) + " values";
        }
        break;
      case ']':
      case '}':
        --depth;
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace gpulse
