// Which of the backend's GPUs a workload's runtime can open. Integer mask entries and an unset mask
// count those GPUs, so they can be resolved only when the set is known exactly.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/device.h"
#include "identity/environment.h"
#include "identity/visible.h"

namespace gpulse::identity {

struct RuntimeScope {
  // Positions in SystemInfo::devices of the GPUs the runtime can open.
  std::vector<std::size_t> positions;
  // Non-empty when the runtime may also see GPUs the backend could not read (or place on the bus),
  // so counting GPUs is not safe; it says why. UUIDs naming readable GPUs still resolve.
  std::string uncounted;
};

// A workload that shares gpulse's view of the host: this process's own environment, or a process
// in the same container (or, both, in none). Every listed device; uncounted when the backend
// skipped a device or lacks a device's PCI bus id.
RuntimeScope HostScope(const SystemInfo& info);

// A process in another container: the GPUs the NVIDIA container runtime gave it, from
// NVIDIA_VISIBLE_DEVICES in its environment ("all", "none", "void", or host indices and GPU UUIDs).
// A refusal when the variable is absent (CDI or device mounts may have given the GPUs) or has a
// form gpulse does not resolve (volume-mounts strategy, MIG instances). `who` names the process in
// messages ("process 4242 (container 3f2a…)").
std::variant<RuntimeScope, Refusal> ContainerScope(const Environment& env, const SystemInfo& info,
                                                   std::string_view who);

}  // namespace gpulse::identity
