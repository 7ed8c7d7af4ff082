// A GPU vendor layer. Structural information is read once when the backend opens; live readings are
// taken per device per tick through the field catalogue.
//
// Thread-safety: a Backend is used from one thread at a time (NVML calls are serialising anyway).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "core/device.h"
#include "core/fields.h"
#include "core/result.h"

namespace gpulse::gpu {

// Counts of what went wrong while reading, so partial failure is visible rather than silent.
struct ReadStats {
  std::uint64_t failed_calls = 0;        // transient errors: the reading is absent this tick
  std::uint64_t unsupported_calls = 0;   // NOT_SUPPORTED (remembered, not retried)
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const SystemInfo& info() const = 0;

  // Reads `fields` of the device at position `pos` of info().devices into `out`, which it resizes to
  // AllFields().size() and clears first. Unreadable fields stay absent; a lost device sets
  // out.state = kLost and reads nothing. Never fails as a whole.
  // REQUIRES: pos < info().devices.size()
  virtual void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) = 0;

  virtual const ReadStats& stats() const = 0;

  // The processes using the device at position `pos`, with per-process memory and utilization
  // where the driver gives them. Listing processes is expensive and serialising in the driver
  // (research/vendors.md section 2), so a backend answers from a cache younger than
  // kProcessListMinIntervalNs instead of asking again. The default: not supported.
  // REQUIRES: pos < info().devices.size()
  virtual ProcessList Processes(std::size_t pos);
};

// Process lists are read from the driver at most once per second per device.
inline constexpr std::int64_t kProcessListMinIntervalNs = 1'000'000'000;

// How to find and open a backend. Empty strings mean "the default".
struct BackendOptions {
  std::string nvml_library;       // --nvml-lib / GPULSE_NVML_LIBRARY
  std::string simulate;           // --simulate NAME|PATH: load the NVML simulator with this scenario
  std::string simulator_library;  // where the simulator is; found next to the binary by default
};

}  // namespace gpulse::gpu
