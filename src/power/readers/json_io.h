// Reading untrusted JSON artifacts without ever throwing, and the typed checks the rules need.
// Python's json writes NaN/Infinity literals; they are read here as the strings "NaN", "Infinity"
// and "-Infinity", so a field holding one fails its number check by name instead of the whole file
// failing to parse. Before parsing, kPowerJsonLimits are checked (core/json_limits.h): nesting
// deeper than kMaxJsonDepth (every later walk is recursive), more than 2,000,000 values, more than
// 64 MiB.
// Thread-safe: pure functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/json_limits.h"
#include "core/result.h"

namespace gpulse::power {

using Json = nlohmann::json;

inline constexpr int kMaxJsonDepth = 256;
inline constexpr uint64_t kMaxJsonFileBytes = 64u << 20;
inline constexpr JsonLimits kPowerJsonLimits{kMaxJsonFileBytes, kMaxJsonDepth, 2'000'000};

// kNotFound when absent; kNoPermission or kIo when unreadable; kInvalidArgument when not a regular
// file (read without blocking), larger than 64 MiB, or not JSON (invalid UTF-8 included, too deep,
// too many values: the parser's message or the limit).
Result<Json> ReadJsonFile(const std::filesystem::path& path);
Result<Json> ParseJsonText(std::string_view text);

bool IsFiniteNumber(const Json& j);  // int or float, finite; bool is not a number
bool IsStrictInt(const Json& j);     // integer type, not bool
std::optional<int64_t> AsStrictInt(const Json& j);
std::optional<double> AsFiniteNumber(const Json& j);
bool IsNonEmptyString(const Json& j);
bool IsLowerHex(std::string_view s, size_t length);
// Compact rendering for failure messages, cut to `max_chars`.
std::string Describe(const Json& j, size_t max_chars = 80);
// Python's type names, for messages ("list", "dict", "str", "int", "float", "bool", "NoneType").
std::string_view PyTypeName(const Json& j);

// Evidence equality: bool never equals a number, numbers compare by value, objects by key set,
// arrays in order, except arrays under a "reason_codes" key, which compare as sets.
bool SameEvidence(const Json& a, const Json& b);

}  // namespace gpulse::power
