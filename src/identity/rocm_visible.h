// ROCm's runtime ordinals (docs/identity.md has the rules and their sources, ROCR-Runtime and
// ROCclr code):
//   1. ROCR_VISIBLE_DEVICES filters and re-orders the GPUs first: tokens trimmed and upper-cased;
//      "G…" is a UUID prefix of "GPU-<16 hex>" (5 to 20 characters, unique); anything else is an
//      integer (C strtol base 0, so 0x1 works) counting GPUs in KFD topology order; the first
//      invalid, out-of-range or duplicate token ends the list; set-but-empty hides every GPU.
//   2. HIP then numbers the survivors with HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES when that
//      is empty or unset; integers count survivors, "GPU-…" matches a UUID substring; the first
//      invalid entry ends the list, duplicates are skipped; empty means no filter.
//      OpenCL on ROCm uses GPU_DEVICE_ORDINAL instead, which HIP ignores.
//
// Thread-safety: pure function.
#pragma once

#include <span>

#include "core/device.h"
#include "identity/environment.h"
#include "identity/visible.h"

namespace gpulse::identity {

enum class RocmApi { kHip, kOpenCl };

// `agents`: the GPUs in KFD topology order, each with its UUID as ROCr prints it ("GPU-" + 16
// upper-case hex digits of the unique id, "" when the GPU has none).
Mapping ResolveRocm(const Environment& env, std::span<const DeviceInfo> agents, RocmApi api);

}  // namespace gpulse::identity
