// The explicit table of GPU vendor backends, one line each (adding a vendor is one folder under
// src/gpu and one line here: docs/adr/0023-vendor-registry.md). OpenBackend opens every one of
// them; every backend that finds GPUs contributes them, merged into one list in PCI bus order
// (composite_backend.h) when there are several.
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

// Opens `entries` (the registry by default). One backend that finds GPUs is returned as it is;
// several are merged. A backend that answers Unavailable has no GPUs here. One that fails
// otherwise (or throws) while another finds GPUs is left out, its reason in
// info().backend_errors and on stderr; when none finds GPUs, a configuration mistake
// (kInvalidArgument, kNotFound: a bad --simulate scenario or --nvml-lib) is returned as it is, and
// otherwise an Unavailable error says in one line why no GPU can be read.
Result<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> OpenBackends(const BackendOptions& options,
                                              std::span<const BackendEntry> entries);

}  // namespace gpulse::gpu
