#include "cli/gpu_options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>

namespace gpulse::cli {

void AddGpuOptions(CLI::App& app, gpu::BackendOptions& options) {
  app.add_option("--simulate", options.simulate,
                 "Read simulated GPUs: a built-in scenario name (1xH200, 8xH100, 4xA40-tp2, "
                 "mig-a100, faults, k8s-8xH100, sensorless, lost-at-start, mig-8xA100, mig-h100, "
                 "profiling-faults, health-trips) or a scenario "
                 "YAML file");
  app.add_option("--nvml-lib", options.nvml_library,
                 "NVML library to load (default: $GPULSE_NVML_LIBRARY or libnvidia-ml.so.1)");
  app.add_option("--sysfs-root", options.sysfs_root,
                 "Where the AMD and Intel backends read sysfs (default: /sys; with --simulate only "
                 "this root is read)")
      ->envname("GPULSE_SYSFS_ROOT");
}

gpu::BackendOptions WithProcfs(gpu::BackendOptions options, const std::string& procfs_root) {
  if (!procfs_root.empty()) options.procfs_root = procfs_root;
  return options;
}

std::string FormatValue(const FieldSpec& field, const std::optional<double>& value) {
  if (!value) return "N/A";
  switch (field.value_type) {
    case ValueType::kDouble:
      return fmt::format("{:.3f}", *value);
    case ValueType::kBitmask:
      return fmt::format("0x{:x}", static_cast<unsigned long long>(*value));
    case ValueType::kInt64:
      return fmt::format("{}", static_cast<long long>(std::llround(*value)));
  }
  return "N/A";
}

}  // namespace gpulse::cli
