// Shared plumbing of the exported NVML functions (api_*.cc): the export attribute, the common
// checks every device call makes in NVML's order (initialized → valid handle → GPU lost), and the
// NOT_SUPPORTED gate. Each export is a thin function over these; no exception leaves one.
//
// Thread-safety: OnSession/OnDevice hold the simulator mutex while `fn` runs.
#pragma once

#include <mutex>
#include <string_view>

#include "gpu/nvml/nvml_abi.h"
#include "sim_state.h"

#define GPULSE_SIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace gpulse::sim {

// Everything a device call needs; valid while the simulator lock is held.
struct DeviceCtx {
  Simulator& sim;
  Session& session;
  const DeviceHandle& handle;
  double t;

  unsigned index() const { return handle.index; }
  bool is_mig() const { return handle.mig_slot >= 0; }
  const DeviceSpec& spec() const { return session.scenario().devices[handle.index]; }
  const DeviceModel& model() const { return session.model(handle.index); }
  const MigInstance& mig() const { return spec().mig.instances[handle.mig_slot]; }

  // NVML_ERROR_NOT_SUPPORTED when `call` is not available on this handle at t (a MIG handle, a
  // MIG-enabled parent for utilization and row remapping, the scenario's unsupported list or an
  // active not_supported fault); NVML_SUCCESS otherwise.
  nvmlReturn_t Gate(Call call) const;
};

// Runs fn(Simulator&, Session&) under the lock; UNINITIALIZED without a session.
template <typename Fn>
nvmlReturn_t OnSession(Fn&& fn) noexcept {
  try {
    Simulator& sim = Simulator::Instance();
    std::lock_guard lock(sim.mutex());
    Session* session = sim.session();
    if (session == nullptr) return NVML_ERROR_UNINITIALIZED;
    sim.Count(Simulator::kSessionCalls);
    return fn(sim, *session);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Runs fn(DeviceCtx&) under the lock after the common checks.
template <typename Fn>
nvmlReturn_t OnDevice(nvmlDevice_t device, Fn&& fn) noexcept {
  return OnSession([&](Simulator& sim, Session& session) -> nvmlReturn_t {
    const DeviceHandle* handle = session.Find(device);
    if (handle == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    sim.Count(Simulator::kDeviceCalls);
    const double t = sim.Now();
    if (session.faults().Lost(handle->index, t)) return NVML_ERROR_GPU_IS_LOST;
    DeviceCtx ctx{sim, session, *handle, t};
    return fn(ctx);
  });
}

// Fills `v` when v.fieldId is one of the NVLink fields (api_links.cc) and returns true; false for
// any other field id, leaving `v` alone.
bool FillNvlinkField(const DeviceCtx& c, nvmlFieldValue_t& v);

// Copies `text` and its NUL into buf[0..len): INVALID_ARGUMENT for a null buffer,
// INSUFFICIENT_SIZE when it does not fit.
nvmlReturn_t CopyString(std::string_view text, char* buf, unsigned len);

}  // namespace gpulse::sim
