// Strict parsing of one samples.csv record (schema_version 1). The hot path of validation: no
// allocation unless a field is quoted. A record that breaks any rule is malformed, never guessed
// at. Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulse::power {

// Python's csv module refuses fields longer than this; a longer field is malformed here too.
inline constexpr size_t kMaxCsvFieldBytes = 131072;

struct SampleRow {
  int64_t scrape_seq = 0;
  double timestamp_unix = 0;
  std::string_view hostname;  // views into the line (or into the caller's scratch if quoted)
  int64_t gpu_index = 0;
  std::string_view gpu_uuid;
  double power_w = 0;
};

struct RowParse {
  bool ok = false;
  SampleRow row;
  std::string_view error;  // static text naming the broken rule when !ok
  bool quoted = false;     // the line has a '"': hostname and gpu_uuid may be views into scratch
};

// Parses `line` (without its line terminator; a trailing '\r' is stripped). `scratch` holds
// unquoted text when a field is quoted; the returned views stay valid while `line` and `scratch`
// do.
RowParse ParseSampleRow(std::string_view line, std::string& scratch);

// True when the line (terminator stripped) is exactly the v1 header.
bool IsSamplesHeader(std::string_view line);

}  // namespace gpulse::power
