// Reading one device's compute or graphics process list from NVML without falling into the _v3
// stride trap (research/vendors.md section 1.5): drivers 535.43-535.86 wrote 32-byte entries
// through nvmlDeviceGetComputeRunningProcesses_v3 without a version bump, later headers declare 24
// bytes for it, and one driver was seen writing 16. So the calls are tried in this order:
//   1. nvmlDeviceGetRunningProcessDetailList: explicitly versioned (0x01000018), 32-byte entries;
//   2. the _v2 calls: 24-byte entries, unchanged since they appeared;
//   3. the _v3 calls, with the stride measured from the bytes the driver wrote (MeasureStride);
//   4. the v1 calls: 16-byte entries, no MIG instance ids.
// A call that is absent or answers NOT_SUPPORTED / FUNCTION_NOT_FOUND / ARGUMENT_VERSION_MISMATCH
// falls through to the next; any other error is the answer.
//
// Thread-safety: pure functions over the API (NVML itself serialises).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "gpu/nvml/nvml_api.h"

namespace gpulse::nvml {

enum class ProcessKind { kCompute, kGraphics };

// One decoded driver entry. Absent fields are NVML's "not available" values, never 0.
struct RawProcess {
  unsigned pid = 0;
  std::optional<std::uint64_t> used_memory_bytes;
  std::optional<unsigned> gpu_instance_id;
  std::optional<unsigned> compute_instance_id;
};

struct RawProcessList {
  std::vector<RawProcess> entries;
  std::string source;  // the NVML function that answered
};

// Errors: kUnavailable when no process-list call exists or every one is unsupported; otherwise the
// error class of the NVML return code, with the function and code named.
Result<RawProcessList> ListProcesses(const NvmlApi& api, nvmlDevice_t device, ProcessKind kind);

// The stride (16, 24 or 32 bytes) with which a call wrote `count` entries into `buffer`, which was
// filled with `fill` before the call: the smallest candidate after whose `count` entries every byte
// is still `fill`, and whose last entry's final 4 bytes were written. nullopt when no candidate
// fits (for example a driver that cleared the whole buffer).
std::optional<std::size_t> MeasureStride(std::span<const unsigned char> buffer, unsigned count,
                                         unsigned char fill);

// Decodes `count` entries laid out with `stride` bytes each: 16 = nvmlProcessInfo_v1_t,
// 24 = nvmlProcessInfo_v2_t, 32 = nvmlProcessDetail_v1_t (the v2 fields first in every case).
// REQUIRES: stride is 16, 24 or 32 and buffer.size() >= count * stride.
std::vector<RawProcess> DecodeEntries(std::span<const unsigned char> buffer, unsigned count,
                                      std::size_t stride);

}  // namespace gpulse::nvml
