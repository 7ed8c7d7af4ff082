// The fault layer (docs/faults.md): a Backend over another that adds the kernel log's Xids to
// NVML's, counts each event once, and keeps each GPU's recommended action. The exporter and the
// agent read through it; every other call passes through unchanged.
//
// Each read polls the kernel log (without blocking), hands each Xid line to its GPU by PCI address
// (GPUs NVML cannot open included) and each SXid line to the NVSwitch counts, then merges the
// device's NVML events. A sample gets the merged events (xid_events), the merged counts
// (xid_counts, when the XID field is read) and the recommended action. The records the log holds
// when the layer opens (read until the first empty read) are the ones from before it started.
// Only the kernel's own records count (facility 0: a process writing to /dev/kmsg cannot forge
// them). A GPU reset is seen when this layer's ResetGpu succeeds, when the owner says it reset
// the GPU itself (NoteReset), or when a volatile ECC counter read twice goes back; a reboot when
// the log starts over.
//
// Thread-safety: like every Backend, used from one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "faults/gpu_faults.h"
#include "faults/kmsg.h"
#include "faults/xid_line.h"
#include "gpu/backend.h"

namespace gpulse::faults {

struct FaultOptions {
  // The kernel log: "" reads none; "/dev/kmsg" the kernel's; a file its records (fixtures).
  std::string kernel_log;
  std::string procfs_root = "/proc";  // where the processes an Xid names are looked up
};

// How reading the kernel log goes, for the self metrics and the logs.
struct KernelLogStatus {
  std::string path;  // "" when none is read
  bool readable = false;
  std::string error;          // why it cannot be read (stated, not fatal)
  std::uint64_t records = 0;  // records read
  std::uint64_t xid_lines = 0;
  std::uint64_t unmatched = 0;  // Xid lines for a PCI address no GPU here has
  std::uint64_t lost = 0;       // overwritten before they were read
  std::uint64_t malformed = 0;
  std::uint64_t restarts = 0;  // the log started over (a reboot, for a file)
  std::uint64_t foreign = 0;   // Xid-like records not from the kernel (another facility), ignored
};

// How many distinct NVSwitch SXid series one layer keeps (switch, address, code); more are dropped.
inline constexpr std::size_t kMaxSxidSeries = 1024;

// One NVSwitch's SXid counts.
struct SxidCount {
  std::optional<unsigned> nvswitch;
  std::string pci_bus_id;  // "0000:05:00.0"
  std::uint64_t sxid = 0;
  std::uint64_t count = 0;
};

class FaultBackend final : public gpu::Backend {
 public:
  FaultBackend(std::unique_ptr<gpu::Backend> inner, FaultOptions options);

  const SystemInfo& info() const override { return inner_->info(); }
  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override;
  void ReadInstance(std::size_t pos, std::size_t mig_pos, std::span<const FieldIndex> fields,
                    Sample& out) override;
  void ReadSkipped(std::size_t skipped_pos, std::span<const FieldIndex> fields,
                   Sample& out) override;
  const gpu::ReadStats& stats() const override { return inner_->stats(); }
  void PrimeProfiling(std::span<const FieldIndex> fields) override;
  ProcessList Processes(std::size_t pos) override { return inner_->Processes(pos); }
  void PrimeProcesses() override { inner_->PrimeProcesses(); }
  bool SetSimulatedClock(double seconds) override { return inner_->SetSimulatedClock(seconds); }
  DeviceSettings ReadSettings(std::size_t pos) override { return inner_->ReadSettings(pos); }
  Status SetComputeMode(std::size_t pos, int mode) override {
    return inner_->SetComputeMode(pos, mode);
  }
  Status SetEccMode(std::size_t pos, bool enabled) override {
    return inner_->SetEccMode(pos, enabled);
  }
  Status SetApplicationClocks(std::size_t pos, unsigned mem_mhz, unsigned sm_mhz) override {
    return inner_->SetApplicationClocks(pos, mem_mhz, sm_mhz);
  }
  Status SetPowerLimit(std::size_t pos, double watts) override {
    return inner_->SetPowerLimit(pos, watts);
  }
  Status ResetGpu(std::size_t pos) override;
  Status InjectFault(std::size_t pos, std::string_view fault) override;

  KernelLogStatus kernel_log() const;
  std::vector<SxidCount> sxids() const;
  gpu::Backend& inner() { return *inner_; }

  // Polls the kernel log now (each read does).
  void PollKernelLog();
  // The GPU at `pos` was reset by other means than ResetGpu (the agent's sysfs reset of a real
  // GPU): its reset-class actions clear.
  void NoteReset(std::size_t pos);

 private:
  struct Target {
    std::optional<PciAddress> pci;
    GpuFaults faults;
    std::optional<double> ecc_sbe, ecc_dbe;  // the last volatile ECC counts read (310, 311)
  };
  void Merge(Target& t, std::span<const FieldIndex> fields, Sample& out);
  void Dispatch(const KmsgRecord& r, bool before_start);
  void Update();  // the status from the log's counters
  bool Alive(std::uint32_t pid) const;

  std::unique_ptr<gpu::Backend> inner_;
  FaultOptions options_;
  std::unique_ptr<KmsgSource> log_;
  KernelLogStatus status_;
  // the kernel log's clock when this layer started
  std::int64_t boot_unix_ns_ = 0;  // unix time of the kernel log's 0
  // info().devices first (by position), then info().skipped.
  std::vector<Target> targets_;
  std::map<std::tuple<std::optional<unsigned>, std::string, std::uint64_t>, std::uint64_t> sxids_;
};

// The fault layer of `backend`, or null when it was not opened through one.
FaultBackend* AsFaultBackend(gpu::Backend& backend);
const FaultBackend* AsFaultBackend(const gpu::Backend& backend);

}  // namespace gpulse::faults
