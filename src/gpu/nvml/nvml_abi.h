// The subset of NVML's C ABI that gpulse uses, declared by hand so that no NVIDIA SDK is needed at
// build time. Names, layouts and constants follow NVIDIA's nvml.h; tests/layout checks every
// struct's size and field offsets against an independent machine-readable source (bindgen output of
// nvml.h shipped by Debian in librust-nvml-wrapper-sys-dev). Shared by the backend (caller side)
// and sim/ (callee side).
//
// Everything here is plain C layout (LP64). Nothing here allocates or owns anything.
#pragma once

#include <cstdint>

extern "C" {

typedef struct nvmlDevice_st* nvmlDevice_t;  // opaque handle
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef int nvmlReturn_t;  // an enum in nvml.h, int-sized in the ABI

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_UNKNOWN = 999,
};

#define GPULSE_NVML_STRUCT_VERSION(size, ver) ((unsigned)(size) | ((unsigned)(ver) << 24U))

constexpr unsigned NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
constexpr unsigned NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
constexpr unsigned NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;
constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
constexpr unsigned NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;

typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
constexpr unsigned nvmlMemory_v2 = GPULSE_NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2);

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

enum : int { NVML_TEMPERATURE_GPU = 0 };
enum : int { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum : int { NVML_PSTATE_UNKNOWN = 32 };
enum : int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum : int { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
// nvmlComputeMode_t (int-sized): 1 is deprecated in current drivers but still a valid value.
enum : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

// Clock event (throttle) reason bits.
constexpr unsigned long long nvmlClocksEventReasonGpuIdle = 0x1ULL;
constexpr unsigned long long nvmlClocksEventReasonApplicationsClocksSetting = 0x2ULL;
constexpr unsigned long long nvmlClocksEventReasonSwPowerCap = 0x4ULL;
constexpr unsigned long long nvmlClocksThrottleReasonHwSlowdown = 0x8ULL;
constexpr unsigned long long nvmlClocksEventReasonSyncBoost = 0x10ULL;
constexpr unsigned long long nvmlClocksEventReasonSwThermalSlowdown = 0x20ULL;
constexpr unsigned long long nvmlClocksThrottleReasonHwThermalSlowdown = 0x40ULL;
constexpr unsigned long long nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x80ULL;
constexpr unsigned long long nvmlClocksEventReasonDisplayClockSetting = 0x100ULL;

// Event types (nvmlEventType*).
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

// Process lists. v1 is 16 bytes, v2 24 bytes; see research/vendors.md §1.5 for the _v3 stride trap.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

// usedGpuMemory when the driver cannot say (e.g. no permission): not a reading.
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFFULL;
// gpuInstanceId / computeInstanceId of a process on a GPU without MIG.
constexpr unsigned NVML_INSTANCE_ID_NONE = 0xFFFFFFFFU;

// nvmlDeviceGetRunningProcessDetailList (drivers 535.104+): the 32-byte entry that the _v3 calls
// used without a version bump on 535.43-535.86, moved behind an explicitly versioned list struct.
enum : unsigned {
  NVML_PROCESS_MODE_COMPUTE = 0,
  NVML_PROCESS_MODE_GRAPHICS = 1,
  NVML_PROCESS_MODE_MPS = 2,
};

typedef struct nvmlProcessDetail_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;

typedef struct nvmlProcessDetailList_v1_st {
  unsigned int version;              // nvmlProcessDetailList_v1
  unsigned int mode;                 // NVML_PROCESS_MODE_*
  unsigned int numProcArrayEntries;  // in: capacity of procArray; out: entries (or needed)
  nvmlProcessDetail_v1_t* procArray;
} nvmlProcessDetailList_v1_t;
constexpr unsigned nvmlProcessDetailList_v1 =
    GPULSE_NVML_STRUCT_VERSION(sizeof(nvmlProcessDetailList_v1_t), 1);  // 0x01000018

// nvmlDeviceGetProcessUtilization: one sample per process per driver sampling period.
typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU time of the sample, microseconds since 1970
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

// nvmlFieldValue_t and its value union, for nvmlDeviceGetFieldValues.
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
} nvmlValue_t;

enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};

typedef struct nvmlFieldValue_st {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // CPU time of the value, microseconds since 1970
  long long latencyUsec;  // how long ago the driver refreshed it
  int valueType;          // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

// NVML field ids (NVML_FI_*) gpulse batches through nvmlDeviceGetFieldValues.
enum : unsigned {
  NVML_FI_DEV_MEMORY_TEMP = 82,
  NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83,
  NVML_FI_DEV_POWER_AVERAGE = 185,
  NVML_FI_DEV_POWER_INSTANT = 186,
};

// NVLink counters gpulse reads through nvmlDeviceGetFieldValues (scopeId = link for the per-link
// throughput fields; the error totals are per device).
enum : unsigned {
  NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL = 38,
  NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL = 45,
  NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL = 52,
  NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL = 59,
  NVML_FI_DEV_NVLINK_LINK_COUNT = 91,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,  // KiB since driver load, per link (scopeId)
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
};
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;

// nvmlDeviceGetPcieThroughput counters (nvmlPcieUtilCounter_t); the value is KB/s over 20 ms.
enum : int { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };

// nvmlDeviceGetViolationStatus: time clocks were held below the requested level for a reason.
enum : int {
  NVML_PERF_POLICY_POWER = 0,
  NVML_PERF_POLICY_THERMAL = 1,
  NVML_PERF_POLICY_SYNC_BOOST = 2,
  NVML_PERF_POLICY_BOARD_LIMIT = 3,
  NVML_PERF_POLICY_LOW_UTILIZATION = 4,
  NVML_PERF_POLICY_RELIABILITY = 5,
};

typedef struct nvmlViolationTime_st {
  unsigned long long referenceTime;  // CPU time of the reading, microseconds since 1970
  unsigned long long violationTime;  // ns of violation since driver load
} nvmlViolationTime_t;

// GPU Performance Monitoring (GPM, Hopper and later): the driver snapshots counters into opaque
// samples; nvmlGpmMetricsGet turns two samples into rates and ratios over the time between them.
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;  // opaque, from nvmlGpmSampleAlloc

// nvmlGpmMetricId_t values gpulse asks for (NVML_GPM_METRIC_*).
enum : unsigned {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_INTEGER_UTIL = 4,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
  NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
  NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVDEC_0_UTIL = 30,  // .. NVDEC_7_UTIL = 37
  NVML_GPM_METRIC_NVJPG_0_UTIL = 40,  // .. NVJPG_7_UTIL = 47
  NVML_GPM_METRIC_NVOFA_0_UTIL = 50,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
  NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC = 62,  // link L: RX = 62 + 2L, TX = 63 + 2L, L < 18
  NVML_GPM_METRIC_MAX = 98,
};

// nvml.h declares this as an anonymous struct inside nvmlGpmMetric_t; named here so that the layout
// check (tests/layout) can read it. Same members, same place.
typedef struct nvmlGpmMetricInfo_st {
  char* shortName;
  char* longName;
  char* unit;
} nvmlGpmMetricInfo_t;

typedef struct nvmlGpmMetric_st {
  unsigned int metricId;           // in: NVML_GPM_METRIC_*
  nvmlReturn_t nvmlReturn;         // out: this metric's own status
  double value;                    // out: percent (0..100) for *_UTIL, MiB/s for *_PER_SEC
  nvmlGpmMetricInfo_t metricInfo;  // out: static strings owned by the driver
} nvmlGpmMetric_t;

// The driver reads and writes only metrics[0 .. numMetrics); the array length is the header's
// NVML_GPM_METRIC_MAX of NVML 12.0 (later headers are longer, which the driver does not mind).
typedef struct nvmlGpmMetricsGet_st {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] in use
  nvmlGpmSample_t sample1;  // the earlier sample
  nvmlGpmSample_t sample2;  // the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;

typedef struct nvmlGpmSupport_st {
  unsigned int version;            // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;  // out: non-zero when the GPU has GPM
} nvmlGpmSupport_t;
constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;

}  // extern "C"
