// What gpulse knows about a GPU: structural information read once when a backend opens, and one
// live Sample per device per tick. A reading that is unsupported or failed is absent (nullopt),
// never 0 and never a sentinel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpulse {

struct MigInstance {
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string uuid;     // MIG-...
  std::string profile;  // e.g. "3g.20gb", taken from the instance name; "" when unknown
  std::optional<std::uint64_t> memory_total_bytes;
  bool ids_known = true;  // the driver answered the GI and CI ids (else they are 0 and meaningless)
};

struct DeviceInfo {
  unsigned index = 0;  // the backend's physical index (NVML index; the DRM card number on sysfs)
  std::string name;
  std::string uuid;
  std::string pci_bus_id;                // "00000000:17:00.0"
  std::optional<unsigned> minor_number;  // /dev/nvidiaN
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> power_limit_watts;   // enforced limit at open
  std::optional<unsigned> max_sm_clock_mhz;  // nvmlDeviceGetMaxClockInfo, at open
  std::optional<unsigned> max_memory_clock_mhz;
  std::optional<bool> mig_enabled;
  std::vector<MigInstance> mig_instances;
  // Whether the profiling fields (NVML GPM) can be read, and why not when they cannot.
  bool profiling = false;
  std::string profiling_unsupported_reason;
  // Who made it and which backend reads it: "nvidia"/"nvml", "amd"/"amdgpu", "intel"/"i915" or
  // "intel"/"xe" (the vendor compared case-insensitively). Empty vendor means NVIDIA.
  std::string vendor;
  std::string backend;
  // The vendor's own number where it differs from `index`: on a host read by several backends,
  // `index` is gpulse's number (PCI bus order over every vendor, docs/vendors.md) and this the
  // NVML index; a sysfs GPU (amdgpu, i915, xe) always has its DRM card number here, its `index`
  // counting the vendor's GPUs from 0.
  std::optional<unsigned> backend_index;
};

// A device the backend counted but cannot read (e.g. NVML_ERROR_NO_PERMISSION on its index, or a
// GPU already lost when the backend opened). Its identity is whatever still answered: the driver,
// else the driver's PCI listing (identity_source says which); empty when nothing did.
struct SkippedDevice {
  unsigned index = 0;
  std::string reason;
  bool lost = false;  // the driver said the GPU is lost (GPU_IS_LOST), not merely unreadable
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::string identity_source;  // "nvml", "procfs" or "" (unknown)
  std::optional<unsigned> backend_index;  // as in DeviceInfo
};

struct SystemInfo {
  std::string backend;  // "nvml"
  std::string library;  // the file the vendor library was loaded from
  std::optional<std::string> driver_version;
  std::optional<std::string> library_version;  // NVML version
  bool simulated = false;
  std::string scenario;  // simulator scenario name when simulated
  std::vector<DeviceInfo> devices;
  std::vector<SkippedDevice> skipped;
  // Backends that found GPUs but failed to open, each "name: reason" (the others are read).
  std::vector<std::string> backend_errors;
};

// The vendor of a device in lower case: "nvidia" when the backend did not say.
std::string VendorOf(const DeviceInfo& device);

// The device's node as its driver names it: "nvidia3" (/dev/nvidia3, by the vendor's index, as
// dcgm-exporter's `device` label), "card1" (/dev/dri/card1) for the DRM drivers.
std::string DeviceNode(const DeviceInfo& device);

// One process using a GPU, as the driver lists it (nvidia-smi pmon's view). PIDs are in the
// driver's (the host's) PID namespace. Every reading is optional: absent means the driver did not
// say, never 0.
struct GpuProcess {
  unsigned pid = 0;
  bool compute = false;   // in the compute process list
  bool graphics = false;  // in the graphics process list
  std::optional<std::uint64_t> used_memory_bytes;
  // MIG: the instance the process runs in (nullopt on a GPU without MIG).
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
  // Utilization over the driver's recent samples, percent (nvmlDeviceGetProcessUtilization).
  std::optional<double> sm_util, mem_util, enc_util, dec_util;
};

// The processes on one device at one moment, or why they could not be listed.
struct ProcessList {
  std::int64_t t_mono_ns = 0;                        // when the driver was asked
  std::optional<std::vector<GpuProcess>> processes;  // nullopt: not readable (see `error`)
  std::string error;                                 // why not, when processes is nullopt
  std::string source;              // the driver call that produced the list, for diagnostics
  std::string utilization_source;  // likewise for the utilization ("" when none was available)
};

// The settings DCGM's configuration manager manages, and what the driver allows, read now. Every
// member is absent when the driver does not report it (NOT_SUPPORTED, or an older driver).
struct DeviceSettings {
  // NVML_COMPUTEMODE_*: 0 default (unrestricted), 1 exclusive thread (deprecated), 2 prohibited,
  // 3 exclusive process.
  std::optional<int> compute_mode;
  std::optional<bool> ecc_current;  // ECC mode now
  std::optional<bool> ecc_pending;  // ECC mode after the next reset
  std::optional<bool> persistence_mode;
  std::optional<unsigned> app_sm_clock_mhz;  // application clocks now
  std::optional<unsigned> app_mem_clock_mhz;
  std::optional<unsigned> default_app_sm_clock_mhz;
  std::optional<unsigned> default_app_mem_clock_mhz;
  std::optional<double> power_limit_w;  // the power management limit now
  std::optional<double> default_power_limit_w;
  std::optional<double> min_power_limit_w;  // the range a new limit must be in
  std::optional<double> max_power_limit_w;
  // Supported application clocks: memory clocks, and for each the SM clocks allowed with it (in the
  // same order). Empty when unknown.
  std::vector<unsigned> supported_mem_clocks_mhz;
  std::vector<std::vector<unsigned>> supported_sm_clocks_mhz;
  std::optional<bool> inforom_valid;  // nvmlDeviceValidateInforom
};

enum class DeviceState { kOk, kLost };

// How many XID error events of one code a device has raised since the backend opened.
struct XidCount {
  std::uint64_t xid = 0;
  std::uint64_t count = 0;
};

// The action a GPU's pending faults call for (docs/faults.md): the most severe one gpulse has not
// yet seen done, with the Xid that raised it. Filled by the fault layer (faults/), which the
// exporter and the agent read through; absent elsewhere.
struct XidAction {
  std::string action;  // an ActionInfo name (core/xid_catalogue.h): "RESET_GPU", ...; "NONE"
  int rank = 0;        // its severity (ActionInfo::rank); 0 with "NONE"
  std::uint64_t xid = 0;        // the Xid that raised it (0 with "NONE")
  std::int64_t t_unix_ns = 0;   // when
  bool from_driver = false;     // the driver's own recovery action (Xid 154), not the catalogue's
  std::string description;      // the catalogue's description of the Xid
};

// One device's readings at one tick. `values` is indexed by FieldIndex over AllFields(); only the
// requested fields can be present.
struct Sample {
  std::int64_t t_mono_ns = 0;
  std::int64_t t_unix_ns = 0;
  DeviceState state = DeviceState::kOk;
  std::vector<std::optional<double>> values;
  // Parallel to `values`: set for a requested field the entity does not support (the driver said
  // NOT_SUPPORTED or NO_PERMISSION, or the reading does not exist at this entity's level). A
  // requested field that is neither present nor unsupported failed this read.
  std::vector<bool> unsupported;
  // XID errors the driver reported for this device since its previous read (when the XID field is
  // requested); the XID field itself holds only the last one.
  std::vector<std::uint64_t> xid_events;
  // Every XID event seen so far, counted per code in ascending code order (filled when the XID
  // field 230 is read; the last-value gauge alone hides repeats).
  std::vector<XidCount> xid_counts;
  // The profiling (GPM) graphics-engine ratio has read exactly 0 for several reads while NVML's
  // utilization said the GPU was busy: DCGM's "profiling stuck at 0" failure (nvml_gpm.h).
  bool profiling_stuck = false;
  // The recommended action (XidAction), when the device was read through the fault layer.
  std::optional<XidAction> recommended_action;
};

}  // namespace gpulse
