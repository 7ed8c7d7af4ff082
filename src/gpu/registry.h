// The explicit table of GPU vendor backends, one line each (adding a vendor is one folder under
// src/gpu and one line here: docs/adr/0023-vendor-registry.md). OpenBackend opens every one of
// them; every backend that finds GPUs contributes them, merged into one list in PCI bus order
// (composite_backend.h) when there are several.
#pragma once

#include <chrono>
#include <memory>

#include "gpu/backend.h"

namespace gpulse::gpu {

using OpenFn = Result<std::unique_ptr<Backend>> (*)(const BackendOptions&);

struct BackendEntry {
  const char* name;
  OpenFn open;
};

std::span<const BackendEntry> Backends();

// How long one backend may take to open. NVML's own initialisation can take seconds on a large
// node with persistence mode off, so this is generous.
inline constexpr std::chrono::milliseconds kBackendOpenDeadline{30000};

// Opens `entries` (the registry by default), each on a thread of its own for at most
// `open_deadline`. One backend that finds GPUs is returned as it is; several are merged. A backend
// that answers Unavailable has no GPUs here. One that fails otherwise (throws, or does not finish
// opening in time: its thread is left behind) while another finds GPUs is left out, its reason in
// info().backend_errors and on stderr; when none finds GPUs, a configuration mistake
// (kInvalidArgument, kNotFound: a bad --simulate scenario or --nvml-lib) is returned as it is, and
// otherwise an Unavailable error says in one line why no GPU can be read.
Result<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> OpenBackends(
    const BackendOptions& options, std::span<const BackendEntry> entries,
    std::chrono::milliseconds open_deadline = kBackendOpenDeadline);

}  // namespace gpulse::gpu
