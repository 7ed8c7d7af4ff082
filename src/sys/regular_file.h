// Reading a configuration file a user names (web config, counters file): only a regular file, at
// most `max_bytes`, opened without blocking. A FIFO would block the reader forever and /dev/zero
// would grow memory until bad_alloc (issue 13); both are refused with the path.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.h"

namespace gpulse::sys {

inline constexpr std::size_t kMaxConfigBytes = 1 << 20;  // 1 MiB: far above any real config file

// The whole file. Errors: kNotFound (missing), kNoPermission, kInvalidArgument (not a regular
// file, or larger than max_bytes), kIo; each names the path.
Result<std::string> ReadRegularFile(const std::string& path, std::size_t max_bytes = kMaxConfigBytes);

}  // namespace gpulse::sys
