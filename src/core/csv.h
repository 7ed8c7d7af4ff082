// One CSV cell as RFC 4180 writes it: as it is, or in double quotes (with its quotes doubled) when
// it holds a comma, a quote or a line break. Every CSV gpulse writes quotes through this.
#pragma once

#include <string>
#include <string_view>

namespace gpulse {

inline std::string CsvField(std::string_view v) {
  if (v.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace gpulse
