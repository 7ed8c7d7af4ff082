// The options every GPU-reading subcommand shares (--simulate, --nvml-lib) and opening the backend
// they select.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/fields.h"
#include "core/result.h"
#include "gpu/backend.h"

namespace CLI {
class App;
}

namespace gpulse::cli {

void AddGpuOptions(CLI::App& app, gpu::BackendOptions& options);

// `options` with the command's --procfs-root (when given) as the tree the backends read
// per-process data from (NVML's driver listing, the DRM clients' fdinfo of amdgpu and i915/xe).
gpu::BackendOptions WithProcfs(gpu::BackendOptions options, const std::string& procfs_root);

// Prints a value as the catalogue says it should look ("N/A" when absent).
std::string FormatValue(const FieldSpec& field, const std::optional<double>& value);

}  // namespace gpulse::cli
