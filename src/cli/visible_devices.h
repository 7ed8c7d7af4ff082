// `gpulse devices --visible [--env-from PID] [--runtime R]`: each runtime ordinal (CUDA's by
// default; HIP's, OpenCL's or Level Zero's over AMD and Intel GPUs) of an environment (this
// process's, or another process's exec-time environment from /proc/PID/environ) and the physical
// GPU behind it, or the refusal and its reason (identity::ResolveCuda). Used by devices.cc.
#pragma once

#include <optional>
#include <string>

#include "core/device.h"

namespace gpulse::cli {

struct VisibleOptions {
  bool visible = false;
  std::optional<unsigned> env_from;  // --env-from PID
  std::string procfs_root;           // --procfs-root
  std::string runtime;  // --runtime cuda|hip|opencl|level_zero; "" = the host's first vendor's
};

// Prints the mapping (text, or JSON per docs/schema/visible-devices.schema.json) for the devices in
// `info`. Exit codes: 0 every ordinal resolved, 1 a refusal (printed with its reason) or an
// unreadable environment, 2 a bad --env-from / --procfs-root.
int RunVisible(const SystemInfo& info, const VisibleOptions& options, bool json);

// The same outcome when no GPU backend could be opened: says why, exit 1.
int RunVisibleWithoutBackend(const std::string& why, const VisibleOptions& options, bool json);

}  // namespace gpulse::cli
