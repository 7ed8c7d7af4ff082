// The known name closest to a misspelt one, for "did you mean" messages: the one with the fewest
// single-character edits (insert, delete, replace, swap of neighbours), if few enough to be a typo
// (at most a third of the word, and at most 2), or the only name the word starts.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace gpulse {

// Edits turning `a` into `b` (optimal string alignment distance).
std::size_t EditDistance(std::string_view a, std::string_view b);

std::optional<std::string> ClosestName(std::string_view word, std::span<const std::string> names);

}  // namespace gpulse
