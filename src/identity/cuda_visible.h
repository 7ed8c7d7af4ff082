// CUDA's runtime ordinals from CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER (docs/identity.md has the
// rules and their sources):
//   - unset: every GPU of the scope; "": none; otherwise a comma list in which each entry is an
//     integer (the i-th GPU in the runtime's order), a GPU UUID or unique UUID prefix ("GPU-…"), a
//     MIG UUID ("MIG-…") or the legacy "MIG-GPU-<uuid>/<gi>/<ci>"; list order is ordinal order;
//     the first invalid or duplicate entry ends the list;
//   - CUDA_DEVICE_ORDER=PCI_BUS_ID orders GPUs by PCI bus id. FASTEST_FIRST (the default) is
//     resolved only when it cannot differ from bus order: every GPU it orders is the same model.
// Anything CUDA's documentation leaves open (whitespace, case, a MIG-enabled GPU named as a whole,
// a second MIG instance, an unreadable GPU) is a refusal, never a guess.
//
// Thread-safety: pure function.
#pragma once

#include "core/device.h"
#include "identity/environment.h"
#include "identity/runtime_scope.h"
#include "identity/visible.h"

namespace gpulse::identity {

Mapping ResolveCuda(const Environment& env, const SystemInfo& info, const RuntimeScope& scope);

}  // namespace gpulse::identity
