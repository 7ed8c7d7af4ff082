// The profiling fields (DCGM_FI_PROF_*) through NVML's GPM API: one reader per entity, a GPU (its
// own handle) or a MIG GPU instance (its parent's handle and GPU-instance id). Each Read takes one
// GPM sample and asks NVML for every wanted metric over the time since the previous sample, in one
// nvmlGpmMetricsGet call. Design: docs/adr/0014-profiling-through-gpm.md.
//
// Rules kept here:
//   - never sample faster than kGpmMinIntervalNs (the hardware's floor): a Read sooner than that
//     after the last sample answers the values computed then;
//   - an entity without GPM has every GPM field unsupported, with the reason (unsupported_reason);
//   - a failed call, or a metric outside its range (a ratio outside 0..100 %, a negative or NaN
//     rate), is absent and counted — never reported as 0;
//   - the graphics-engine metric reading exactly 0 while NVML's utilization says the GPU is busy
//     for kStuckReads reads in a row marks the entity "profiling stuck" (DCGM's known failure).
//
// Not thread-safe: one owner thread, like the rest of the backend.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/fields.h"
#include "gpu/backend.h"
#include "gpu/nvml/nvml_api.h"

namespace gpulse::nvml {

constexpr std::int64_t kGpmMinIntervalNs = 100'000'000;
constexpr int kStuckReads = 3;
constexpr double kStuckBusyPercent = 50.0;  // NVML utilization at or above this counts as busy

class GpmReader {
 public:
  // `gpu_instance_id`: set for a MIG instance (then `device` is its parent GPU's handle).
  GpmReader(const NvmlApi* api, nvmlDevice_t device, std::optional<unsigned> gpu_instance_id);
  ~GpmReader();
  GpmReader(GpmReader&& other) noexcept;
  GpmReader& operator=(GpmReader&&) = delete;
  GpmReader(const GpmReader&) = delete;
  GpmReader& operator=(const GpmReader&) = delete;

  // Whether the entity has GPM; asks the driver (and allocates the two samples) on first use. A
  // "no" that is lasting (no GPM, no permission, no GPM in the library) is remembered; a transient
  // failure is asked again at the next call.
  bool Supported();
  const std::string& unsupported_reason() const { return reason_; }

  // Takes the first sample, so the next Read (kGpmMinIntervalNs later or more) has values.
  // No-op when a sample exists or GPM is unsupported.
  void Prime(std::int64_t now_ns, gpu::ReadStats& stats);
  bool primed() const { return latest_ >= 0; }

  // Fills out.values / out.unsupported for the kGpm fields among `fields`. `busy_percent`: NVML's
  // GPU utilization this read (nullopt when unknown), for the stuck-at-zero check.
  void Read(std::span<const FieldIndex> fields, std::int64_t now_ns,
            std::optional<double> busy_percent, Sample& out, gpu::ReadStats& stats);

  bool stuck() const { return stuck_; }
  // A GPM call answered GPU_IS_LOST: the device reader marks the device lost.
  bool lost() const { return lost_; }

 private:
  nvmlReturn_t TakeSample(nvmlGpmSample_t sample);
  // Prepares request_ for `fields` (the metrics, once each, plus the graphics-engine metric) unless
  // it already is: a tick asks for the same fields every time, so this is a comparison.
  void Plan(std::span<const FieldIndex> fields);
  void Compute(std::span<const FieldIndex> fields, nvmlGpmSample_t earlier, nvmlGpmSample_t later,
               gpu::ReadStats& stats);
  void CheckStuck(std::optional<double> busy_percent);

  const NvmlApi* api_;
  nvmlDevice_t device_;
  std::optional<unsigned> gpu_instance_id_;
  std::optional<bool> supported_;
  std::string reason_;
  nvmlGpmSample_t samples_[2] = {nullptr, nullptr};
  int latest_ = -1;  // index into samples_ of the newest sample, -1 before the first
  std::int64_t latest_ns_ = 0;
  // The values of the last metrics computation by FieldIndex, reused inside the 100 ms floor.
  std::vector<std::optional<double>> values_;
  std::unique_ptr<nvmlGpmMetricsGet_t> request_;  // 4 KB: allocated once, reused every read
  std::vector<FieldIndex> planned_;               // the `fields` request_ was prepared for
  std::vector<int> planned_field_;                // per request_ metric: its FieldIndex, or -1
  bool plan_valid_ = false;
  std::vector<bool> metric_unsupported_;    // by FieldIndex: the driver said NOT_SUPPORTED
  std::optional<double> graphics_percent_;  // the last graphics-engine reading, percent
  int zero_while_busy_ = 0;
  bool stuck_ = false;
  bool lost_ = false;
};

}  // namespace gpulse::nvml
