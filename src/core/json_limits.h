// Bounds on a JSON text, checked by one pass over its bytes before any parser allocates a value:
// nlohmann's tree costs up to ~35 bytes of memory per byte of input (a 64 MiB file of `{},` took
// 2.26 GB, issue 13), so the size of the file alone bounds nothing. The limits of each reader are
// in docs/formats.md "Limits". Thread-safe: a pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpulse {

struct JsonLimits {
  std::uint64_t max_bytes = 64u << 20;
  int max_depth = 256;                 // nested objects and arrays
  std::uint64_t max_values = 1'000'000;  // objects, arrays, members and array elements
};

// A message naming the first limit passed ("more than 1000000 values"), or nullopt. Does not
// validate the JSON (the parser does); counts what lies outside strings.
std::optional<std::string> CheckJsonShape(std::string_view text, const JsonLimits& limits);

}  // namespace gpulse
