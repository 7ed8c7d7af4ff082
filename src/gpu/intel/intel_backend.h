// The Intel GPU backend: discrete and integrated GPUs driven by i915 or xe, read from sysfs
// (hwmon, frequency, tile memory; see intel_cards.h for the kernel ABI each file follows) and the
// DRM clients' fdinfo in procfs (drm_clients.h). One backend object serves both drivers; each
// DeviceInfo says which (backend "i915" or "xe").
//
// Fields: the catalogue's `intel` column (core/fields.h) says how each is read; a field whose
// source is kNotRead, or whose file the driver does not expose on this device, is unsupported
// (never 0). A read error is a transient failure (ReadStats::failed_calls, absent this tick).
// Power is the energy counter's difference over the time between two reads (absent on the first
// read and after the counter went backwards); utilization is the busiest engine class of the
// device's DRM clients between two procfs scans (absent until there are two).
//
// Thread-safety: one thread at a time, as every Backend.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/result.h"
#include "gpu/backend.h"

namespace gpulse::gpu::intel {

// The clocks readings are stamped with; tests replace them to make rates deterministic.
struct IntelClocks {
  std::function<std::int64_t()> mono_ns;  // default MonotonicNowNs
  std::function<std::int64_t()> unix_ns;  // default UnixNowNs
};

// Opens every i915/xe GPU under options.sysfs_root (empty: "/sys"; with options.simulate set, only
// an explicit sysfs_root is read). fdinfo comes from options.procfs_root (empty: "/proc"; with
// options.simulate set and no procfs_root, no fdinfo: utilization and processes unsupported).
// Errors: kUnavailable "no i915 or xe GPU under <root>/class/drm" when there is none.
Result<std::unique_ptr<Backend>> OpenIntelBackend(const BackendOptions& options);
Result<std::unique_ptr<Backend>> OpenIntelBackend(const BackendOptions& options,
                                                  IntelClocks clocks);

}  // namespace gpulse::gpu::intel
