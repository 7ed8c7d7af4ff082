#include "core/closest.h"

#include <algorithm>
#include <vector>

namespace gpulse {

std::size_t EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::optional<std::string> ClosestName(std::string_view word, std::span<const std::string> names) {
  if (word.empty() || word.size() > 64) return std::nullopt;  // a path or a sentence, not a typo
  const std::size_t limit = std::min<std::size_t>(2, std::max<std::size_t>(1, word.size() / 3));
  std::optional<std::string> best;
  std::size_t best_distance = limit + 1;
  bool tie = false;
  for (const std::string& name : names) {
    const std::size_t d = EditDistance(word, name);
    if (d < best_distance) {
      best = name, best_distance = d, tie = false;
    } else if (d == best_distance) {
      tie = true;
    }
  }
  if (best && !tie) return best;
  // A prefix of exactly one name ("valid" for "validate-power").
  std::optional<std::string> prefixed;
  for (const std::string& name : names) {
    if (name.size() > word.size() && name.starts_with(word)) {
      if (prefixed) return std::nullopt;
      prefixed = name;
    }
  }
  return prefixed;
}

}  // namespace gpulse
