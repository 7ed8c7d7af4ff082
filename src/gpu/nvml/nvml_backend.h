// The NVML backend: structural information once at open, live readings per device per tick through
// the field catalogue, XID errors from an NVML event set.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "gpu/backend.h"
#include "gpu/nvml/nvml_api.h"
#include "gpu/nvml/nvml_processes.h"
#include "gpu/nvml/nvml_reader.h"

namespace gpulse::nvml {

class NvmlLibrary;

class NvmlBackend final : public gpu::Backend {
 public:
  // Builds a backend over an initialised API. `keepalive` owns whatever keeps `api` valid (the
  // loaded library and its nvmlInit); tests pass nullptr with an API of fakes.
  // `procfs_root` ("" for none) is where the driver's GPU listing is read.
  static Result<std::unique_ptr<NvmlBackend>> Create(const NvmlApi& api,
                                                     std::shared_ptr<void> keepalive,
                                                     std::string library_path,
                                                     const std::string& procfs_root = "");
  ~NvmlBackend() override;

  const SystemInfo& info() const override { return info_; }
  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override;
  void ReadInstance(std::size_t pos, std::size_t mig_pos, std::span<const FieldIndex> fields,
                    Sample& out) override;
  const gpu::ReadStats& stats() const override { return stats_; }
  ProcessList Processes(std::size_t pos) override;
  bool SetSimulatedClock(double seconds) override;
  void PrimeProfiling(std::span<const FieldIndex> fields) override;

  // Settings (docs/nvml-backend.md, "Settings"): read and changed through NVML on request, never
  // cached. A missing optional symbol makes the setting absent (ReadSettings) or kUnavailable (the
  // setters). ResetGpu resets simulated GPUs only (gpulseSimResetDevice); on a real GPU it is
  // kUnavailable and touches nothing. InjectFault likewise (gpulseSimInjectFault).
  DeviceSettings ReadSettings(std::size_t pos) override;
  Status SetComputeMode(std::size_t pos, int mode) override;
  Status SetEccMode(std::size_t pos, bool enabled) override;
  Status SetApplicationClocks(std::size_t pos, unsigned mem_mhz, unsigned sm_mhz) override;
  Status SetPowerLimit(std::size_t pos, double watts) override;
  Status ResetGpu(std::size_t pos) override;
  Status InjectFault(std::size_t pos, std::string_view fault) override;

 private:
  NvmlBackend(const NvmlApi& api, std::shared_ptr<void> keepalive)
      : api_(api), keepalive_(std::move(keepalive)) {}
  void RegisterXidEvents();
  void DrainEvents();
  void AttachGpm(const std::vector<std::vector<nvmlDevice_t>>& mig_handles);
  // Before the first read of a profiling field: one GPM sample of every entity. With `wait`
  // (PrimeProfiling) the 100 ms floor is then waited out once so that the next read has values;
  // a read never waits (issue 40: the wait delayed the first sample's readings past its stamp and
  // the exporter's first scrape). On a simulated clock the samples are taken one floor earlier in
  // simulated time, so the first read has values either way.
  void PrimeGpm(std::span<const FieldIndex> fields, bool wait);

  std::int64_t NowMonoNs() const;  // the simulated clock when one is set
  std::int64_t NowUnixNs() const;

  NvmlApi api_;
  std::shared_ptr<void> keepalive_;
  std::optional<std::int64_t> simulated_ns_;  // SetSimulatedClock
  SystemInfo info_;
  std::vector<DeviceReader> readers_;                        // parallel to info_.devices
  std::vector<ProcessReader> process_readers_;               // parallel to info_.devices
  std::vector<std::vector<DeviceReader>> instance_readers_;  // parallel to each mig_instances
  nvmlEventSet_t events_ = nullptr;
  gpu::ReadStats stats_;
  bool gpm_primed_ = false;
};

// The registry's entry point: loads NVML (or the simulator for options.simulate) and opens it.
Result<std::unique_ptr<gpu::Backend>> OpenNvmlBackend(const gpu::BackendOptions& options);

}  // namespace gpulse::nvml
