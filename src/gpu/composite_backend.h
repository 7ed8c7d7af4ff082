// One Backend over several vendors' backends (docs/adr/0023-vendor-registry.md): a host with an
// NVIDIA and an AMD GPU is read through NVML and amdgpu at once, each device by its own backend.
//
// Devices are merged into one list in PCI bus order (domain, bus, device, function) and numbered
// 0.. in that order (DeviceInfo::index; the vendor's own number moves to backend_index), so a mixed
// host has one stable numbering however the vendors count. A host with one backend is never
// wrapped: its numbering stays the vendor's (NVML's) own.
//
// Isolation: every call into a member backend runs on that backend's own worker thread and waits
// at most `deadline`. A call that does not return in time (a sysfs read of a GPU in reset can
// block) leaves the backend stalled: its devices read as absent, without waiting, until the stuck
// call returns; a member that throws is marked failed and its devices read absent from then on.
// Each stall or failure is reported once, with its reason, through failures(); the other members
// keep sampling.
//
// Thread-safety: like every Backend, used from one thread at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.h"

namespace gpulse::gpu {

// A member backend that stalled or failed, and why; `stalled` clears when the stuck call returns.
struct BackendFailure {
  std::string backend;  // "amdgpu"
  std::string reason;
  bool stalled = false;  // waiting on a call (else: failed for good)
};

struct NamedBackend {
  std::string name;
  std::unique_ptr<Backend> backend;
};

// The merged view over `members` (at least one; one keeps its own numbering), with the reasons
// other backends failed to open in info().backend_errors. REQUIRES: each member's info() is final.
std::unique_ptr<Backend> MakeCompositeBackend(std::vector<NamedBackend> members,
                                              std::chrono::milliseconds deadline,
                                              std::vector<std::string> open_errors = {});

// What went wrong so far in a composite backend (empty for any other backend): one entry per
// member that stalled or failed, in the order it happened.
std::vector<BackendFailure> BackendFailures(const Backend& backend);

// The deadline for one call into a member backend.
inline constexpr std::chrono::milliseconds kMemberCallDeadline{2000};

}  // namespace gpulse::gpu
