// Small text helpers shared by the visible-device mask readers: splitting a list, recognising an
// index, matching an identifier prefix against the known ones.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpulse::identity {

// "a,b,,c" → {"a", "b", "", "c"}; "" → {""}.
std::vector<std::string_view> SplitCommas(std::string_view list);

// One or more ASCII digits, nothing else.
bool IsDecimal(std::string_view token);
// The value of IsDecimal text, nullopt when it does not fit an unsigned.
std::optional<unsigned> ParseDecimal(std::string_view token);

bool HasWhitespace(std::string_view token);

// Which candidates start with `prefix`: exactly, and ignoring ASCII case.
struct PrefixMatches {
  std::vector<std::size_t> exact;
  std::vector<std::size_t> ignoring_case;
};
PrefixMatches MatchPrefix(std::string_view prefix, std::span<const std::string> candidates);

std::string ToUpper(std::string_view text);
// Whether `text` starts with `prefix`, ignoring ASCII case (no copy of either).
bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix);

// "'text'" for messages.
std::string Quoted(std::string_view text);

// "GPU 1 and GPU 3", "GPU 0, GPU 2 and GPU 5".
std::string JoinNames(std::span<const std::string> names);

}  // namespace gpulse::identity
