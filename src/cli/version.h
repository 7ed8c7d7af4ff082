#pragma once

#include <string>

namespace gpulse::cli {

// "gpulse 0.1.0 (commit abcdef123456)"
std::string VersionString();

}  // namespace gpulse::cli
