// Live readings of one NVML device through the field catalogue. Each NVML call is made at most once
// per Read however many catalogue fields it feeds; a call that answered NOT_SUPPORTED (or
// NO_PERMISSION) is remembered and never retried; GPU_IS_LOST marks the device lost for good.
//
// Not thread-safe: one owner thread.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "core/device.h"
#include "core/fields.h"
#include "gpu/backend.h"
#include "gpu/nvml/nvml_api.h"
#include "gpu/nvml/nvml_gpm.h"

namespace gpulse::nvml {

// The NVML calls behind the catalogue's NvmlSource values.
enum class Call : unsigned {
  kUtilization,
  kEncoder,
  kDecoder,
  kMemoryV2,
  kMemoryV1,
  kPowerUsage,
  kFieldPowerInstant,  // one entry of the batched nvmlDeviceGetFieldValues
  kFieldMemoryTemp,    // another entry of the same batch
  kEnergy,
  kPowerLimit,
  kPowerMgmtLimit,
  kPowerLimitConstraints,  // min and max from one call
  kPowerDefaultLimit,
  kTemperature,
  kSmClock,
  kMemClock,
  kAppSmClock,
  kAppMemClock,
  kMaxSmClock,
  kMaxMemClock,
  kMaxVideoClock,
  kPstate,
  kClockReasons,
  kPcieReplay,
  kEccSbeVolatile,
  kEccDbeVolatile,
  kEccSbeAggregate,
  kEccDbeAggregate,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kRemappedRows,
  kXidEvents,
  kFanSpeed,
  kPcieTx,
  kPcieRx,
  kPcieMaxLinkGen,
  kPcieMaxLinkWidth,
  kPcieLinkGen,
  kPcieLinkWidth,
  kViolationPower,
  kViolationThermal,
  kViolationSyncBoost,
  kViolationBoardLimit,
  kViolationLowUtil,
  kViolationReliability,
  kFieldNvlinkCrcFlit,  // entries of the same batched nvmlDeviceGetFieldValues
  kFieldNvlinkCrcData,
  kFieldNvlinkReplay,
  kFieldNvlinkRecovery,
  kFieldNvlinkThroughput,  // two entries (TX, RX) over all links
  kInforom,                // nvmlDeviceValidateInforom
  kGpm,                    // read by the GpmReader
  kCount
};

// Whether `call` is one entry of the batched nvmlDeviceGetFieldValues.
bool IsFieldValueCall(Call call);

class DeviceReader {
 public:
  DeviceReader(const NvmlApi* api, nvmlDevice_t handle) : api_(api), handle_(handle) {}

  // A reader of a MIG instance handle: only the calls NVML answers per instance (memory) are
  // made; every other call is unsupported at this level, never the parent's value.
  static DeviceReader ForInstance(const NvmlApi* api, nvmlDevice_t handle);

  // Reads the profiling fields through GPM: of this GPU (`gpu_instance_id` nullopt), or of the MIG
  // instance `gpu_instance_id` of the GPU `parent`.
  void AttachGpm(nvmlDevice_t parent, std::optional<unsigned> gpu_instance_id);
  GpmReader* gpm() { return gpm_.get(); }
  const GpmReader* gpm() const { return gpm_.get(); }

  // See Backend::Read. out.t_mono_ns must be set: rates and the GPM floor are timed by it.
  void Read(std::span<const FieldIndex> fields, Sample& out, gpu::ReadStats& stats);

  bool lost() const { return lost_; }
  void MarkLost() { lost_ = true; }
  bool unsupported(Call call) const { return unsupported_[static_cast<unsigned>(call)]; }
  void MarkUnsupported(Call call) { unsupported_.set(static_cast<unsigned>(call)); }
  void RecordXid(unsigned long long xid) {
    last_xid_ = static_cast<double>(xid);
    pending_xids_.push_back(xid);
    ++xid_counts_[xid];
  }
  nvmlDevice_t handle() const { return handle_; }

 private:
  using Values = std::array<std::optional<double>, kNvmlSourceCount>;  // indexed by NvmlSource

  // Records the outcome of `call`; true when its values may be used.
  bool Check(Call call, nvmlReturn_t rc, gpu::ReadStats& stats);
  void Perform(Call call, Values& v, gpu::ReadStats& stats);
  void ReadMemory(Values& v, gpu::ReadStats& stats);
  void ReadFieldValues(const std::bitset<static_cast<unsigned>(Call::kCount)>& wanted, Values& v,
                       std::int64_t now_ns, gpu::ReadStats& stats);
  // DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: MB/s from the KiB counter's change since the last read.
  std::optional<double> NvlinkRate(double kib, std::int64_t now_ns);
  // Whether `source` can never be read on this device (its call, and any fallback, unsupported).
  bool SourceUnsupported(NvmlSource source) const;
  void CopyXidCounts(Sample& out) const;

  const NvmlApi* api_;
  nvmlDevice_t handle_;
  bool lost_ = false;
  std::bitset<static_cast<unsigned>(Call::kCount)> unsupported_;
  std::optional<double> last_xid_;
  std::vector<std::uint64_t> pending_xids_;                 // handed out by the next Read
  std::map<unsigned long long, std::uint64_t> xid_counts_;  // code -> events since open
  std::unique_ptr<GpmReader> gpm_;
  std::optional<double> nvlink_kib_;  // the last NVLink TX+RX counter, KiB
  std::int64_t nvlink_ns_ = 0;
};

// The call that yields a catalogue source.
Call CallFor(NvmlSource source);

}  // namespace gpulse::nvml
