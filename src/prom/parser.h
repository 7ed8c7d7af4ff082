// A streaming parser of the Prometheus text exposition format 0.0.4, for gpulse's own consumers
// (the power collector polls exporters and reads DCGM_FI_DEV_POWER_USAGE by `gpu` and `UUID`; the
// tests read gpulse's exposition back).
//
// Feed() takes the body in chunks of any size (split anywhere, even inside a line) and calls the
// callbacks for each complete line; Finish() handles a last line without its newline. Label values
// and HELP texts are unescaped. Comment lines other than HELP and TYPE, and blank lines, are
// skipped. The first malformed line stops parsing with an error naming its line number and the
// problem.
//
// A Parser is one parse of one body; not thread-safe. The ParsedSample passed to on_sample (and the
// views inside it) are valid only during the call: its buffers are reused line after line so a
// large body parses without an allocation per sample.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpulse::prom {

struct ParsedLabel {
  std::string name;
  std::string value;  // unescaped
};

struct ParsedSample {
  std::string_view name;
  std::vector<ParsedLabel> labels;  // in the order written
  double value = 0;
  std::optional<std::int64_t> timestamp_ms;

  // The value of label `name`, or nullptr.
  const std::string* Label(std::string_view label_name) const;
};

struct ParseCallbacks {
  std::function<void(std::string_view name, std::string_view help)> on_help;  // help unescaped
  std::function<void(std::string_view name, std::string_view type)> on_type;
  std::function<void(const ParsedSample&)> on_sample;
};

class Parser {
 public:
  explicit Parser(ParseCallbacks callbacks) : cb_(std::move(callbacks)) {}

  // Parses every complete line in pending input + `chunk`. After an error, further calls return it.
  Status Feed(std::string_view chunk);
  // Parses what is left (a last line without a newline).
  Status Finish();

  std::uint64_t lines() const { return line_no_; }

 private:
  Status ParseLine(std::string_view line);
  Status ParseComment(std::string_view line);
  Status ParseSampleLine(std::string_view line);
  Status Fail(std::string what);

  ParseCallbacks cb_;
  std::string pending_;
  std::string help_;
  ParsedSample sample_;
  std::uint64_t line_no_ = 0;
  std::optional<Error> error_;
};

// Parses a whole body at once.
Status ParseExposition(std::string_view body, ParseCallbacks callbacks);

// Parses a sample value in Go ParseFloat syntax as the format uses it: decimal or exponent
// notation, NaN, +Inf, -Inf (Inf case-insensitive, optional sign).
std::optional<double> ParseValue(std::string_view text);

}  // namespace gpulse::prom
