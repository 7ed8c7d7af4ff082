// Which runtime's numbering to resolve, over which GPUs: CUDA numbers NVIDIA GPUs, HIP and OpenCL
// on ROCm number AMD GPUs, Level Zero numbers Intel GPUs. On a host with several vendors each
// runtime sees only its vendor's GPUs, so each mask is resolved over that subset of the scope
// (docs/identity.md, "Mixed hosts").
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "core/device.h"
#include "identity/environment.h"
#include "identity/runtime_scope.h"
#include "identity/visible.h"

namespace gpulse::identity {

enum class Runtime { kCuda, kHip, kOpenCl, kLevelZero };

// "cuda", "hip", "opencl", "level_zero"; and back (nullopt for anything else).
std::string_view RuntimeName(Runtime runtime);
std::optional<Runtime> ParseRuntime(std::string_view name);

// The vendor ("nvidia", "amd", "intel") whose GPUs the runtime numbers.
std::string_view RuntimeVendor(Runtime runtime);

// The environment variables that decide the runtime's numbering, in the order they apply.
std::span<const char* const> RuntimeVariables(Runtime runtime);

// Whether any of them is set (even to "").
bool RuntimeMasked(Runtime runtime, const Environment& env);

// The runtime of the first vendor present: CUDA when the host has NVIDIA GPUs (or skipped ones),
// else HIP for AMD, else Level Zero for Intel; CUDA when there are none.
Runtime DefaultRuntime(const SystemInfo& info);

// The runtime's ordinals over the GPUs of its vendor within `scope`. Ordinals carry the GPUs'
// DeviceInfo::index. Level Zero: a plain Level Zero program, or a SYCL one when
// ONEAPI_DEVICE_SELECTOR is set; with several Intel GPUs only under ZE_ENABLE_PCI_ID_DEVICE_ORDER=1
// (the driver's own order is not known).
Mapping ResolveRuntime(Runtime runtime, const Environment& env, const SystemInfo& info,
                       const RuntimeScope& scope);

}  // namespace gpulse::identity
