#include "identity/mask_tokens.h"

#include <cctype>
#include <limits>

namespace gpulse::identity {

std::vector<std::string_view> SplitCommas(std::string_view list) {
  std::vector<std::string_view> out;
  while (true) {
    std::size_t comma = list.find(',');
    out.push_back(list.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    list.remove_prefix(comma + 1);
  }
}

bool IsDecimal(std::string_view token) {
  if (token.empty()) return false;
  for (char c : token) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::optional<unsigned> ParseDecimal(std::string_view token) {
  if (!IsDecimal(token)) return std::nullopt;
  unsigned long long v = 0;
  for (char c : token) {
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > std::numeric_limits<unsigned>::max()) return std::nullopt;
  }
  return static_cast<unsigned>(v);
}

bool HasWhitespace(std::string_view token) {
  for (char c : token) {
    if (std::isspace(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

std::string ToUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(text[i])) !=
        std::toupper(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

PrefixMatches MatchPrefix(std::string_view prefix, std::span<const std::string> candidates) {
  PrefixMatches m;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].empty()) continue;
    if (std::string_view(candidates[i]).starts_with(prefix)) m.exact.push_back(i);
    if (StartsWithIgnoringCase(candidates[i], prefix)) m.ignoring_case.push_back(i);
  }
  return m;
}

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string JoinNames(std::span<const std::string> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace gpulse::identity
