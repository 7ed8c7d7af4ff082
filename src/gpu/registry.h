// The explicit table of GPU vendor backends, one line each. OpenBackend tries them in order and
// returns the first that finds devices or, when none does, the most useful explanation of why.
#pragma once

#include <memory>

#include "gpu/backend.h"

namespace gpulse::gpu {

using OpenFn = Result<std::unique_ptr<Backend>> (*)(const BackendOptions&);

struct BackendEntry {
  const char* name;
  OpenFn open;
};

std::span<const BackendEntry> Backends();

// An Unavailable error says, in one line, why no GPU can be read (library not found, driver not
// loaded, no permission); other errors are configuration mistakes (a bad --simulate scenario).
Result<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options);

}  // namespace gpulse::gpu
