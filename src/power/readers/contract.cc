#include "power/readers/contract.h"

#include <algorithm>
#include <iterator>

namespace gpulse::power {

bool IsKnownRole(std::string_view role) {
  return std::find(std::begin(kRoles), std::end(kRoles), role) != std::end(kRoles);
}

bool IsSafeRelativeSubpath(std::string_view path) {
  if (path.empty() || path.front() == '/' || path.front() == '~') return false;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(begin, end - begin);
    if (part.empty() || part == "..") return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace gpulse::power
