#include "cli/version.h"

#include "cli/build_info.h"

namespace gpulse::cli {

std::string VersionString() {
  return std::string("gpulse ") + kGpulseVersion + " (commit " + kGpulseGitCommit + ")";
}

}  // namespace gpulse::cli
