// oneAPI's runtime ordinals on Intel GPUs from ZE_AFFINITY_MASK (Level Zero) and
// ONEAPI_DEVICE_SELECTOR (the DPC++/SYCL runtime), resolved only where the form is a plain index
// list and refused with the reason otherwise: refuse rather than guess.
//
// Sources read (through the project's search tool, December 2026):
//   [L0]  oneAPI Level Zero Specification, Core Programming Guide: "Affinity Mask" and "Device
//         Hierarchy" (spec.oneapi.io/level-zero/latest/core/PROG.html): ZE_AFFINITY_MASK is a
//         comma-separated list of device indices, or "device.sub-device" pairs; devices and
//         sub-devices not listed are not visible to the application; ZE_FLAT_DEVICE_HIERARCHY
//         (FLAT, the default since 2023; COMPOSITE; COMBINED) decides whether a multi-tile device
//         is one device or one device per tile, and so what an index counts. The mask is applied by
//         the Level Zero driver, beneath every runtime built on it (SYCL, OpenMP).
//   [DPC] intel/llvm sycl/doc/EnvironmentVariables.md, ONEAPI_DEVICE_SELECTOR (and its
//         predecessor SYCL_DEVICE_FILTER): ';'-separated terms "[!]backend:devices", backend one
//         of level_zero, opencl, cuda, hip, native_cpu or '*', devices a ','-list of '*', a device
//         type (gpu, cpu, fpga), an index, or "index.sub-device"; '!' excludes; the device index
//         counts the devices of that backend as it enumerates them; a filter list selects the
//         union of what its filters select.
//   Issue oneapi-src/level-zero#86: a mask naming two sub-devices of one root exposes the root.
//
// The rules gpulse resolves, everything else being a refusal:
//   - ZE_AFFINITY_MASK unset: every device. Set to a list of distinct decimal indices in ascending
//     order, each below the device count: those devices, in that order. A sub-device ("0.1"), a
//     repeated or out-of-range index, a list out of ascending order (which order the driver reports
//     masked devices in is not documented), the empty string (not documented either), or anything
//     else is refused.
//   - ONEAPI_DEVICE_SELECTOR (SYCL only; a plain Level Zero program ignores it): unset, or
//     "level_zero:*" / "level_zero:gpu": every Level Zero device. "level_zero:" followed by a plain
//     ascending list of distinct indices: those devices. Other backends ("opencl:…", "*:gpu"), more
//     than one term, negations ("!level_zero:0"), sub-devices and the rest are refused. Without a
//     level_zero-only selector SYCL lists the same GPUs once per backend (Level Zero and OpenCL),
//     so a SYCL ordinal is not known and the whole mapping is refused.
//   - Both set: ZE_AFFINITY_MASK is applied first (by the Level Zero driver [L0]) and the
//     selector's indices count the devices it left ([DPC]: indices count the backend's devices as
//     the backend enumerates them, and the backend enumerates only the unmasked ones).
//   - A device with more than one tile makes every index ambiguous unless
//     ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE (FLAT and COMBINED number tiles): refused.
//
// Thread-safety: pure function.
#pragma once

#include <span>

#include "core/device.h"
#include "identity/environment.h"
#include "identity/visible.h"

namespace gpulse::identity {

enum class LevelZeroApi {
  kLevelZero,  // a program on the Level Zero API (zeDeviceGet order)
  kSycl,       // a DPC++/SYCL program: Level Zero, then ONEAPI_DEVICE_SELECTOR
};

// `devices`: the Intel GPUs in the order the Level Zero driver enumerates them. `tiles`: each
// device's tile count, parallel to `devices`; empty means one tile each (Arc, Flex, Battlemage).
Mapping ResolveLevelZero(const Environment& env, std::span<const DeviceInfo> devices,
                         LevelZeroApi api, std::span<const unsigned> tiles = {});

}  // namespace gpulse::identity
