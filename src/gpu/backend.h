// A GPU vendor layer. Structural information is read once when the backend opens; live readings are
// taken per device per tick through the field catalogue.
//
// Thread-safety: a Backend is used from one thread at a time (NVML calls are serialising anyway).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/device.h"
#include "core/entity.h"
#include "core/fields.h"
#include "core/result.h"

namespace gpulse::gpu {

// Counts of what went wrong while reading, so partial failure is visible rather than silent.
struct ReadStats {
  std::uint64_t failed_calls = 0;       // transient errors: the reading is absent this tick
  std::uint64_t unsupported_calls = 0;  // NOT_SUPPORTED (remembered, not retried)
  // Profiling (GPM): calls that failed (also counted in failed_calls), and metric values outside
  // their range that were dropped instead of reported.
  std::uint64_t profiling_failed_calls = 0;
  std::uint64_t profiling_rejected_values = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const SystemInfo& info() const = 0;

  // Reads `fields` of the device at position `pos` of info().devices into `out`, which it resizes
  // to AllFields().size() and clears first. Unreadable fields stay absent, and out.unsupported
  // marks those the device never gives; a lost device sets out.state = kLost and reads nothing but
  // its XID counts (when the XID field is asked for). Never fails as a whole. REQUIRES: pos <
  // info().devices.size()
  virtual void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) = 0;

  // Reads `fields` of MIG instance `mig_pos` of device `pos` (info().devices[pos].mig_instances)
  // through the instance's own handle, like Read. Only readings the driver gives per instance
  // (memory) are read; readings it gives only for the parent are unsupported here, never copied
  // from the parent. A lost parent makes the instance lost. The default: every field unsupported.
  // REQUIRES: pos < info().devices.size(), mig_pos < its mig_instances.size()
  virtual void ReadInstance(std::size_t pos, std::size_t mig_pos,
                            std::span<const FieldIndex> fields, Sample& out);

  // Reads a GPU the backend counted but cannot open (info().skipped[skipped_pos]): it has no
  // readings, so every field is unsupported, and it is lost when the driver said so. The fault
  // layer (faults/) adds the Xids the kernel log has for it. REQUIRES: skipped_pos <
  // info().skipped.size()
  virtual void ReadSkipped(std::size_t skipped_pos, std::span<const FieldIndex> fields,
                           Sample& out);

  virtual const ReadStats& stats() const = 0;

  // Readings over an interval (NVML GPM's profiling fields) need two samples at least 100 ms
  // apart: a read never waits for them, so the first read of such a field has it absent and the
  // next read after the floor has it. A one-shot command that wants values on its first read
  // (dmon, devices) calls this first: it takes the first samples of `fields` for every entity and
  // waits out the floor once (on a simulated clock, without waiting). The default: nothing.
  virtual void PrimeProfiling(std::span<const FieldIndex> fields);

  // The processes using the device at position `pos`, with per-process memory and utilization
  // where the driver gives them. Listing processes is expensive and serialising in the driver
  // (research/vendors.md section 2), so a backend answers from a cache younger than
  // kProcessListMinIntervalNs instead of asking again. The default: not supported.
  // REQUIRES: pos < info().devices.size()
  virtual ProcessList Processes(std::size_t pos);

  // Per-process utilization read from DRM fdinfo (amdgpu, i915, xe) is the busy time between two
  // scans: a one-shot command (`ps`) calls this first, which takes the first scan, waits
  // kProcessPrimeNs and makes the next Processes() scan again, so its one listing has SM% (issue
  // 40: it was always N/A). The default: nothing (NVML keeps its own utilization samples).
  virtual void PrimeProcesses();

  // Simulated devices only (the agent's simulated clock, docs/agent.md): sets the simulator's time
  // to `seconds` and stamps every later reading and process list with it (t_mono_ns = seconds,
  // t_unix_ns = kSimulatedEpochUnixNs + seconds), so rates and loads follow the simulated clock.
  // False, and nothing changes, when the devices are not simulated. The default: false.
  virtual bool SetSimulatedClock(double seconds);

  // The settings DCGM's configuration manager reads and sets (docs/health.md, "Configuration"),
  // read now from the driver. A setting the device does not report is absent. The default: every
  // setting absent. REQUIRES: pos < info().devices.size()
  virtual DeviceSettings ReadSettings(std::size_t pos);

  // Sets one setting of the GPU at `pos`. Errors are values: kNoPermission when the driver refuses
  // the caller (NVML_ERROR_NO_PERMISSION), kUnavailable when the device does not support it,
  // kInvalidArgument when the driver rejects the value, kNotFound when the GPU is lost. The
  // defaults: kUnavailable. ECC changes are pending until the next reset, as on real GPUs.
  // REQUIRES: pos < info().devices.size()
  virtual Status SetComputeMode(std::size_t pos, int mode);
  virtual Status SetEccMode(std::size_t pos, bool enabled);
  virtual Status SetApplicationClocks(std::size_t pos, unsigned mem_mhz, unsigned sm_mhz);
  virtual Status SetPowerLimit(std::size_t pos, double watts);

  // Resets the GPU at `pos` (a policy's action, docs/health.md). Only simulated GPUs are reset
  // here: settings return to their defaults, pending ECC modes apply, volatile ECC counters clear.
  // A real GPU is never reset through this call (kUnavailable); the agent refuses or does it
  // itself (--allow-reset). The default: kUnavailable.
  virtual Status ResetGpu(std::size_t pos);

  // Simulated GPUs only (--simulate): injects a fault into the GPU at `pos` now, at the
  // simulator's current time (the simulated clock when one is set), as the scenario's faults
  // happen (sim/README.md, "Injecting faults at run time"). `fault` is one YAML flow map in the
  // scenario's fault grammar without `device` and `at`; kinds that allow `until` take an optional
  // `duration_s` (> 0) instead: "{kind: xid, xid: 79}", "{kind: ecc, sbe: 0, dbe: 1}",
  // "{kind: throttle, reasons: [sw_thermal_slowdown], duration_s: 5}", "{kind: gpu_lost}". An
  // injected XID shows in the next Read of the XID field (sample.xid_events). Errors are values,
  // with the simulator's reason: kInvalidArgument for a bad fault, kNotFound when the GPU is
  // already lost, kUnavailable when the devices are not simulated. The default: kUnavailable.
  // REQUIRES: pos < info().devices.size()
  virtual Status InjectFault(std::size_t pos, std::string_view fault);
};

// Unix time of simulated second 0 when a simulated clock drives the readings: 2026-01-01T00:00Z.
inline constexpr std::int64_t kSimulatedEpochUnixNs = 1'767'225'600'000'000'000;

// Reads one entity: a GPU through Read, a GPU instance through ReadInstance, and for an entity
// without readings of its own (a compute instance, a skipped GPU) an empty sample, lost when the
// entity is lost.
void ReadEntity(Backend& backend, const Entity& entity, std::span<const FieldIndex> fields,
                Sample& out);

// Process lists are read from the driver at most once per second per device.
inline constexpr std::int64_t kProcessListMinIntervalNs = 1'000'000'000;
// PrimeProcesses' wait between the two fdinfo scans.
inline constexpr std::int64_t kProcessPrimeNs = 200'000'000;

// How to find and open a backend. Empty strings mean "the default".
struct BackendOptions {
  std::string nvml_library;  // --nvml-lib / GPULSE_NVML_LIBRARY
  std::string simulate;      // --simulate NAME|PATH: load the NVML simulator with this scenario
  std::string simulator_library;  // where the simulator is; found next to the binary by default
  // Where the driver's own GPU listing is read (the identity of GPUs NVML cannot open):
  // $GPULSE_PROCFS_ROOT, else /proc for real GPUs; with --simulate only $GPULSE_PROCFS_ROOT.
  std::string procfs_root;
  // Where the sysfs backends (amdgpu, i915/xe) look for /sys: --sysfs-root / $GPULSE_SYSFS_ROOT,
  // else "/sys". Their per-process readings (fdinfo) use procfs_root, else /proc.
  std::string sysfs_root;
};

}  // namespace gpulse::gpu
