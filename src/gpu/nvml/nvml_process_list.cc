#include "gpu/nvml/nvml_process_list.h"

#include <cstddef>
#include <cstring>

#include "gpu/nvml/nvml_errors.h"

namespace gpulse::nvml {
namespace {

static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 process entry");
static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "v2 process entry");
static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "process detail entry");
static_assert(offsetof(nvmlProcessDetail_v1_t, usedGpuCcProtectedMemory) == 24, "detail layout");
static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "process detail list");
static_assert(nvmlProcessDetailList_v1 == 0x01000018U, "process detail list version");

constexpr int kMaxAttempts = 4;  // a list that keeps growing between calls is given up on
constexpr unsigned kSlack = 8;   // room for processes that start between two calls
constexpr unsigned char kFill =
    0xA5;  // no plausible pid, size or instance id is made of 0xA5 bytes

// "Try the next call" rather than "this is the answer".
bool FallsThrough(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
         rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
}

Error CallError(const char* function, nvmlReturn_t rc) {
  std::string msg = std::string(function) + ": " + ReturnName(rc);
  switch (Classify(rc)) {
    case ErrorClass::kNoPermission:
      return {ErrorCode::kNoPermission, msg};
    case ErrorClass::kGpuLost:
      return {ErrorCode::kUnavailable, msg};
    default:
      return {ErrorCode::kIo, msg};
  }
}

RawProcess FromFields(unsigned pid, unsigned long long memory, std::optional<unsigned> gi,
                      std::optional<unsigned> ci) {
  RawProcess p;
  p.pid = pid;
  if (memory != NVML_VALUE_NOT_AVAILABLE) p.used_memory_bytes = memory;
  if (gi && *gi != NVML_INSTANCE_ID_NONE) p.gpu_instance_id = gi;
  if (ci && *ci != NVML_INSTANCE_ID_NONE) p.compute_instance_id = ci;
  return p;
}

// Outcome of one way of asking: a list, "try the next way", or an error that is the answer.
struct Attempt {
  enum { kList, kNext, kError } outcome = kNext;
  std::vector<RawProcess> entries;
  nvmlReturn_t rc = NVML_SUCCESS;
};

// The count-then-fill protocol shared by the _v2/_v3/v1 calls. `call(count, buffer)` must fill at
// most `count` entries; `decode(buffer, count)` turns the bytes into entries (or nullopt).
template <typename Call, typename Decode>
Attempt CountThenFill(std::size_t capacity_bytes_per_entry, Call call, Decode decode,
                      unsigned (*capacity_for)(unsigned needed)) {
  Attempt a;
  unsigned count = 0;
  nvmlReturn_t rc = call(&count, nullptr);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (rc == NVML_SUCCESS && count == 0) {
      a.outcome = Attempt::kList;
      return a;
    }
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_SUCCESS) break;
    unsigned capacity = capacity_for(count);
    std::vector<unsigned char> buffer(std::size_t{capacity} * capacity_bytes_per_entry, kFill);
    count = capacity;
    rc = call(&count, buffer.data());
    if (rc == NVML_SUCCESS) {
      auto entries = decode(std::span<const unsigned char>(buffer), count);
      if (!entries) {
        a.outcome = Attempt::kNext;  // an answer that cannot be read safely is not used
        return a;
      }
      a.outcome = Attempt::kList;
      a.entries = std::move(*entries);
      return a;
    }
  }
  a.rc = rc;
  a.outcome = FallsThrough(rc) ? Attempt::kNext : Attempt::kError;
  return a;
}

unsigned WithSlack(unsigned needed) { return needed + kSlack; }
// Room for MeasureStride to see a driver that clears more than it fills (see its comment).
unsigned ForMeasuring(unsigned needed) { return 2 * needed + kSlack; }

Attempt ViaDetailList(const NvmlApi& api, nvmlDevice_t device, ProcessKind kind) {
  Attempt a;
  if (api.DeviceGetRunningProcessDetailList == nullptr) return a;
  nvmlProcessDetailList_v1_t list{};
  list.version = nvmlProcessDetailList_v1;
  list.mode =
      kind == ProcessKind::kCompute ? NVML_PROCESS_MODE_COMPUTE : NVML_PROCESS_MODE_GRAPHICS;
  nvmlReturn_t rc = api.DeviceGetRunningProcessDetailList(device, &list);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (rc == NVML_SUCCESS && (list.numProcArrayEntries == 0 || list.procArray != nullptr)) {
      a.outcome = Attempt::kList;
      for (unsigned i = 0; list.procArray != nullptr && i < list.numProcArrayEntries; ++i) {
        const nvmlProcessDetail_v1_t& e = list.procArray[i];
        a.entries.push_back(
            FromFields(e.pid, e.usedGpuMemory, e.gpuInstanceId, e.computeInstanceId));
      }
      return a;
    }
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_SUCCESS) break;
    std::vector<nvmlProcessDetail_v1_t> entries(WithSlack(list.numProcArrayEntries));
    list.numProcArrayEntries = static_cast<unsigned>(entries.size());
    list.procArray = entries.data();
    rc = api.DeviceGetRunningProcessDetailList(device, &list);
    if (rc == NVML_SUCCESS) {
      a.outcome = Attempt::kList;
      for (unsigned i = 0; i < list.numProcArrayEntries && i < entries.size(); ++i) {
        const nvmlProcessDetail_v1_t& e = entries[i];
        a.entries.push_back(
            FromFields(e.pid, e.usedGpuMemory, e.gpuInstanceId, e.computeInstanceId));
      }
      return a;
    }
  }
  a.rc = rc;
  a.outcome = FallsThrough(rc) ? Attempt::kNext : Attempt::kError;
  return a;
}

template <typename Entry>
Attempt ViaTyped(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*, Entry*), nvmlDevice_t device) {
  if (fn == nullptr) return {};
  auto call = [&](unsigned* count, unsigned char* buffer) {
    return fn(device, count, reinterpret_cast<Entry*>(buffer));
  };
  auto decode = [](std::span<const unsigned char> bytes,
                   unsigned count) -> std::optional<std::vector<RawProcess>> {
    return DecodeEntries(bytes, count, sizeof(Entry));
  };
  return CountThenFill(sizeof(Entry), call, decode, &WithSlack);
}

Attempt ViaMeasured(nvmlReturn_t (*fn)(nvmlDevice_t, unsigned*, void*), nvmlDevice_t device) {
  if (fn == nullptr) return {};
  auto call = [&](unsigned* count, unsigned char* buffer) { return fn(device, count, buffer); };
  auto decode = [](std::span<const unsigned char> bytes,
                   unsigned count) -> std::optional<std::vector<RawProcess>> {
    auto stride = MeasureStride(bytes, count, kFill);
    if (!stride) return std::nullopt;
    return DecodeEntries(bytes, count, *stride);
  };
  // Every candidate stride fits in 32 bytes per entry.
  return CountThenFill(sizeof(nvmlProcessDetail_v1_t), call, decode, &ForMeasuring);
}

bool AllFill(std::span<const unsigned char> bytes, unsigned char fill) {
  for (unsigned char b : bytes) {
    if (b != fill) return false;
  }
  return true;
}

}  // namespace

std::optional<std::size_t> MeasureStride(std::span<const unsigned char> buffer, unsigned count,
                                         unsigned char fill) {
  if (count == 0) return std::nullopt;
  for (std::size_t stride : {std::size_t{16}, std::size_t{24}, std::size_t{32}}) {
    const std::size_t end = stride * count;
    if (end > buffer.size()) break;
    // The last field of every layout (usedGpuMemory, computeInstanceId, usedGpuCcProtectedMemory)
    // ends the entry, so a driver writing this stride wrote the final 4 bytes of entry count-1.
    if (AllFill(buffer.subspan(end - 4, 4), fill)) continue;
    if (AllFill(buffer.subspan(end), fill)) return stride;
  }
  return std::nullopt;
}

std::vector<RawProcess> DecodeEntries(std::span<const unsigned char> buffer, unsigned count,
                                      std::size_t stride) {
  std::vector<RawProcess> out;
  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const unsigned char* e = buffer.data() + std::size_t{i} * stride;
    unsigned pid = 0;
    unsigned long long memory = 0;
    std::memcpy(&pid, e + offsetof(nvmlProcessInfo_v2_t, pid), sizeof pid);
    std::memcpy(&memory, e + offsetof(nvmlProcessInfo_v2_t, usedGpuMemory), sizeof memory);
    std::optional<unsigned> gi, ci;
    if (stride >= sizeof(nvmlProcessInfo_v2_t)) {
      unsigned g = 0, c = 0;
      std::memcpy(&g, e + offsetof(nvmlProcessInfo_v2_t, gpuInstanceId), sizeof g);
      std::memcpy(&c, e + offsetof(nvmlProcessInfo_v2_t, computeInstanceId), sizeof c);
      gi = g;
      ci = c;
    }
    out.push_back(FromFields(pid, memory, gi, ci));
  }
  return out;
}

Result<RawProcessList> ListProcesses(const NvmlApi& api, nvmlDevice_t device, ProcessKind kind) {
  const bool compute = kind == ProcessKind::kCompute;
  struct Way {
    const char* name;
    Attempt (*run)(const NvmlApi&, nvmlDevice_t, bool);
  };
  static constexpr Way kWays[] = {
      {"nvmlDeviceGetRunningProcessDetailList",
       [](const NvmlApi& a, nvmlDevice_t d, bool c) {
         return ViaDetailList(a, d, c ? ProcessKind::kCompute : ProcessKind::kGraphics);
       }},
      {"RunningProcesses_v2",
       [](const NvmlApi& a, nvmlDevice_t d, bool c) {
         return ViaTyped(
             c ? a.DeviceGetComputeRunningProcesses_v2 : a.DeviceGetGraphicsRunningProcesses_v2, d);
       }},
      {"RunningProcesses_v3",
       [](const NvmlApi& a, nvmlDevice_t d, bool c) {
         return ViaMeasured(
             c ? a.DeviceGetComputeRunningProcesses_v3 : a.DeviceGetGraphicsRunningProcesses_v3, d);
       }},
      {"RunningProcesses",
       [](const NvmlApi& a, nvmlDevice_t d, bool c) {
         return ViaTyped(
             c ? a.DeviceGetComputeRunningProcesses_v1 : a.DeviceGetGraphicsRunningProcesses_v1, d);
       }},
  };
  for (const Way& way : kWays) {
    Attempt a = way.run(api, device, compute);
    std::string name = way.name;
    if (!name.starts_with("nvml")) {
      name.insert(0, compute ? "nvmlDeviceGetCompute" : "nvmlDeviceGetGraphics");
    }
    if (a.outcome == Attempt::kList) return RawProcessList{std::move(a.entries), name};
    if (a.outcome == Attempt::kError) return CallError(name.c_str(), a.rc);
  }
  return Unavailable(std::string("no usable NVML call lists ") +
                     (compute ? "compute" : "graphics") + " processes");
}

}  // namespace gpulse::nvml
