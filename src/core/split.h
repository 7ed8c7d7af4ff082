// Splitting a list on a separator, dropping empty items ("a,,b," -> {"a", "b"}): paths split on '/'
// and comma-separated entity lists. (Device masks keep their empty items: identity/mask_tokens.h.)
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpulse {

inline std::vector<std::string> SplitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) parts.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace gpulse
